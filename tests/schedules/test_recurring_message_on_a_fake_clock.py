"""A recurring fixed message fires once per period: three days, three posts, no model call.

The clock is moved by hand; each period is claimed twice (a second claim finds nothing), and
the post goes out through the reply ledger and is recorded in the history.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.schedules.rig import FakeClock, rig

fake = fake_anthropic_fixture()


async def test_a_daily_message_posts_three_times_over_three_days_without_the_model(
        sqlite_url: str, fake: FakeAnthropic) -> None:
    clock = FakeClock(datetime(2026, 11, 25, 8, 0, tzinfo=UTC))
    async with rig(sqlite_url, fake, clock) as room:
        [answer] = await room.say("/remind cron 0 9 * * * stand-up in five minutes")
        assert "2026-11-25 09:00 UTC" in answer

        assert await room.scheduler.fire_due() == []  # not yet due
        for day in range(3):
            clock.advance(hours=1 if day == 0 else 24)
            assert len(await room.scheduler.fire_due()) == 1
            assert await room.scheduler.fire_due() == []  # claimed once
            posts = await room.posted(2 + day)
        assert posts[1:] == ["stand-up in five minutes"] * 3
        assert fake.requests == []

        stored = await room.store.get("local:main")
        scheduled = [m for m in stored if m.metadata.extra.get("schedule") and not m.is_command]
        assert [m.participant.id for m in scheduled] == ["support"] * 3
        assert len({m.metadata.message_id for m in scheduled}) == 3  # three platform posts
        [schedule] = await room.scheduler.book.listed(conversation_id="local:main")
        assert schedule.fired == 3
        assert schedule.due_at == datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
