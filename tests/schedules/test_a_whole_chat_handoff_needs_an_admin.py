"""Where the only conversation is the whole chat (a group without threads), `/human` quiets the
bot for everyone there: once admins are set, only an admin may hand it over; a member is told
so and the bot keeps answering."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.schedules.rig import FakeClock, rig
from threadline.people.access import Access

fake = fake_anthropic_fixture()


async def test_a_member_cannot_hand_the_whole_chat_to_people(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    fake.script(text("Still here."))
    admins = Access(admins=frozenset({"local:ann"}))
    async with rig(sqlite_url, fake, clock, access=admins) as room:
        [refused] = await room.say("/human", user="bob")
        assert refused.startswith("Only an admin may hand this whole chat to people")
        assert room.desk_channel.sent == []  # nobody was told
        assert await room.say("@support are you there?", user="bob") == ["Still here."]

        [handed] = await room.say("/human the printer is on fire", user="ann")
        assert "A person will answer here" in handed
        assert await room.say("@support hello?", user="bob") == []  # now people answer
