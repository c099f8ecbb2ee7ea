"""The time schedules are kept by: the wall clock in production, a hand-moved one in tests.

Schedules compare due times with `now()` and wait with `sleep()`; nothing else in the package
reads the time, so a test moves a fake clock through three periods without sleeping.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Says what time it is (timezone-aware, UTC) and waits."""

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The wall clock and `asyncio.sleep`."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
