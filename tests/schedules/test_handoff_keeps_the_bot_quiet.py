"""Human handoff: after `/human` the bot stays quiet while people answer, the team's room gets
one notice, and after `/bot on` the agent answers with the humans' replies in its prompt."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.schedules.rig import FakeClock, rig

fake = fake_anthropic_fixture()


async def test_human_then_quiet_then_bot_on_sees_what_the_humans_said(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    fake.script(text("Let me look at order 55."), text("Bob refunded order 55 for you."))
    async with rig(sqlite_url, fake, clock) as room:
        assert await room.say("@support I want a refund for order 55") == [
            "Let me look at order 55."]
        [answer] = await room.say("/human the bot cannot refund")
        assert "A person will answer here" in answer and "The team has been told" in answer
        [notice] = [r.text for r in room.desk_channel.sent]
        assert "ann asked for a person in local:main (the bot cannot refund)" in notice
        assert "order 55" in notice  # the summary: what was said

        assert await room.say("@support hello? anyone?") == []
        assert await room.say("Hi Ann, I refunded order 55 to your card.", user="bob") == []
        [again] = await room.say("/human", user="ann")
        assert "already with the team" in again
        assert len(room.desk_channel.sent) == 1  # one notice per handoff

        assert await room.say("/bot on") == ["The bot answers here again."]
        assert await room.say("@support what did Bob do?") == ["Bob refunded order 55 for you."]
        assert len(fake.requests) == 2
        assert "I refunded order 55 to your card" in room.prompt_text(1)


async def test_a_handoff_ends_when_the_pause_runs_out_and_a_human_reply_renews_it(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    fake.script(text("Back again."))
    async with rig(sqlite_url, fake, clock) as room:
        await room.say("/human")
        clock.advance(hours=1.5)
        assert await room.say("On it.", user="bob") == []  # renews: 2 hours from now
        clock.advance(hours=1.5)
        assert await room.say("@support still there?") == []  # 3 h after /human: still quiet
        clock.advance(hours=1)
        assert await room.say("@support still there?") == ["Back again."]
