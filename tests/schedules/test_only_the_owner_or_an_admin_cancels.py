"""`/reminders` lists a conversation's schedules to anyone, but only the person who set one (or
an admin) can cancel it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.schedules.rig import FakeClock, rig

fake = fake_anthropic_fixture()


async def test_bob_cannot_cancel_anns_reminder_but_ann_and_an_admin_can(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    async with rig(sqlite_url, fake, clock, admins=("local:carol",)) as room:
        [answer] = await room.say("/remind in 1 hour to call the bank", user="ann")
        first = re.search(r"\(([0-9a-f]{12});", answer)
        assert first is not None, answer
        [answer] = await room.say("/remind tomorrow 9:00: pay rent", user="ann")
        second = re.search(r"\(([0-9a-f]{12});", answer)
        assert second is not None, answer

        [listing] = await room.say("/reminders", user="bob")
        assert "call the bank" in listing and "pay rent" in listing

        [refused] = await room.say(f"/reminders cancel {first.group(1)}", user="bob")
        assert refused.startswith("Only ann")
        assert len(await room.scheduler.book.listed(conversation_id="local:main")) == 2

        [done] = await room.say(f"/reminders cancel {first.group(1)}", user="ann")
        assert done == f"Cancelled {first.group(1)}."
        [done] = await room.say(f"/reminders cancel {second.group(1)}", user="carol")
        assert done == f"Cancelled {second.group(1)}."
        assert await room.scheduler.book.listed(conversation_id="local:main") == []

        clock.advance(days=2)
        assert await room.scheduler.fire_due() == []  # cancelled: nothing fires
        assert fake.requests == []
