"""Retention: reply records older than the configured number of days are deleted, nothing else.

The conversation history has its own lifetime (`threadline history prune`); records are
diagnostics and usually kept for less. `RecordRetention` prunes once at start and then every
`every` seconds while `threadline run` runs; `threadline inspect prune` does it by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta

import structlog

from threadline.errors import StoreError
from threadline.history.model import utc_now
from threadline.inspector.records import ReplyRecords

log = structlog.get_logger("threadline.inspector")

PRUNE_EVERY = 3600.0


def cutoff(days: float, now: datetime | None = None) -> datetime:
    """The moment before which records are older than `days` days."""
    return (now or utc_now()) - timedelta(days=days)


async def prune_records(records: ReplyRecords, days: float) -> int:
    """Delete the records older than `days` days; returns how many went."""
    removed = await records.prune(cutoff(days))
    if removed:
        log.info("inspector.records_pruned", removed=removed, retention_days=days)
    return removed


class RecordRetention:
    """Prunes records older than `days` now and then every `every` seconds, in the background."""

    def __init__(self, records: ReplyRecords, days: float, *, every: float = PRUNE_EVERY) -> None:
        self.records = records
        self.days = days
        self.every = every
        self.passes = 0  # prune passes done, each followed by `pass_done` being set
        self.pass_done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                await prune_records(self.records, self.days)
            except StoreError as exc:
                log.warning("inspector.prune_failed", error=str(exc), retention_days=self.days)
            self.passes += 1
            self.pass_done.set()
            await asyncio.sleep(self.every)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
