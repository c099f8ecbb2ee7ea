"""Retention: reply records older than the configured number of days are deleted, nothing else.

The conversation history has its own lifetime (`threadline history prune`); records are
diagnostics and usually kept for less. `RecordRetention` prunes once at start and then every
`every` seconds while `threadline run` runs; `threadline inspect prune` does it by hand.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

import structlog

from threadline.history.model import utc_now
from threadline.inspector.records import ReplyRecords
from threadline.periodic import Periodic

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


class RecordRetention(Periodic):
    """Prunes records older than `days` now and then every `every` seconds, in the background."""

    def __init__(self, records: ReplyRecords, days: float, *, every: float = PRUNE_EVERY) -> None:
        super().__init__(partial(prune_records, records, days), every=every,
                         name="inspector.prune")
        self.records = records
        self.days = days
