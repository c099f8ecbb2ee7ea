"""The time schedules and handoffs are kept by: the wall clock in production, a hand-moved
one in tests.

Due times and pauses are compared with `now()`; nothing else in either package reads the time,
so a test moves a fake clock through three periods and calls `Scheduler.fire_due` without
sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Says what time it is (timezone-aware, UTC)."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)
