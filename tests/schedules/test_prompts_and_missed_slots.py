"""An agent-prompt schedule runs the agent with the conversation's history and posts its
answer, or nothing when it answers that there is nothing to say; a one-off slot missed by more
than the grace is not posted; a recurring one missed for days fires once, not once a day."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.schedules.rig import FakeClock, rig
from threadline.schedules import Schedule, Timing

fake = fake_anthropic_fixture()


def prompt_schedule(text: str, timing: Timing) -> Schedule:
    return Schedule(conversation_id="local:main", agent="support", kind="prompt", text=text,
                    due_at=timing.due_at, cron=timing.cron, timezone="UTC", created_by="ann",
                    created_by_name="ann", channel="local",
                    origin={"channel_type": "local", "channel_name": "local",
                            "channel_id": "main", "scope": "channel"})


async def test_a_prompt_posts_the_agents_answer_or_nothing_when_it_has_nothing_to_say(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    fake.script(text("Noted: order 55 is open."), text("NOTHING"),
                text("Order 55 is still open: follow up with the warehouse."))
    async with rig(sqlite_url, fake, clock) as room:
        await room.say("@support order 55 has not shipped")
        await room.scheduler.book.add(prompt_schedule(
            "Follow up on open orders", Timing(clock.now(), cron="0 * * * *")))
        clock.advance(hours=1)
        assert len(await room.scheduler.fire_due()) == 1
        async with asyncio.timeout(30):
            await fake.wait_for_requests(2)
        clock.advance(hours=1)
        assert len(await room.scheduler.fire_due()) == 1
        posts = await room.posted(2)
        assert posts == ["Noted: order 55 is open.",
                         "Order 55 is still open: follow up with the warehouse."]
        prompt = json.dumps(fake.bodies[1]["messages"])
        assert "order 55 has not shipped" in prompt and "Follow up on open orders" in prompt
        stored = await room.store.get("local:main")
        assert "NOTHING" not in [m.content for m in stored]  # nothing to say: nothing kept


async def test_missed_slots_are_skipped_past_the_grace_and_never_pile_up(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    async with rig(sqlite_url, fake, clock) as room:
        room.scheduler.grace = 3600
        await room.say("/remind in 10 minutes to check the oven")
        await room.say("/remind cron 0 9 * * * daily stand-up")
        clock.advance(days=5)  # every process was down for five days
        fired = await room.scheduler.fire_due()
        assert sorted((f.schedule.text, f.turn is None) for f in fired) == [
            ("check the oven", True), ("daily stand-up", True)]
        clock.advance(hours=1, minutes=30)  # 2026-11-30 09:00 is due half an hour ago
        [late] = await room.scheduler.fire_due()
        assert late.turn is not None and "(late: this was due at 2026-11-30 09:00" in (
            late.turn.content)
        posts = await room.posted(3)
        assert posts[2].startswith("daily stand-up")
        states = sorted(s.state for s in await room.scheduler.book.listed(
            states=("active", "missed")))
        assert states == ["active", "missed"]
        assert fake.requests == []
