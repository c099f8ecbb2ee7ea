"""The schedule book: scheduled turns kept in the store's database, claimed once when due.

A schedule says what to post (a fixed message, delivered as written, or a prompt the agent
answers with the conversation's history), where (the conversation, the channel and the thread
it was asked in), and when (a due time, and a cron expression when it recurs).

Claiming a due schedule is one transaction: the row is moved on (its next occurrence, or
finished) only if nobody moved it first, and in the same transaction its firing is recorded in
the turn inbox as an ordinary turn to answer (`sql_inbox.insert_turn`), with an id made of the
schedule and the slot. From there the turn pipeline owns it like any other: one process answers
the conversation, the reply ledger posts it once, the history records it, a crash retries it.
On PostgreSQL the rows are read `FOR UPDATE SKIP LOCKED`, so replicas claiming at once take
different schedules instead of waiting for each other; the guarded update makes a double claim
impossible on either database.

A slot that fell due while no process ran is fired late (the turn says so) within `grace`;
past it, a one-off schedule is marked `missed` and a recurring one skips to its next occurrence.
A recurring schedule fires at most once per claim, for its latest slot: missed slots never pile
up.

A backend keeps the book as its `schedules` part (the SQL backend's is
`threadline.backends.sql.schedules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from threadline.history.model import StoredMessage
from threadline.schedules.limits import ScheduleLimits
from threadline.schedules.schedule import Schedule, State


@dataclass(frozen=True, slots=True)
class Firing:
    """A schedule claimed for one slot: the turn recorded for it (None: skipped, past grace)."""

    schedule: Schedule
    slot: datetime
    turn: StoredMessage | None


class ScheduleBook(Protocol):
    """Schedules kept by the backend (its `schedules` part); see the module docstring."""

    async def add(self, schedule: Schedule) -> Schedule:
        ...

    async def add_within(self, schedule: Schedule, limits: ScheduleLimits) -> Schedule:
        """Add a schedule a person asked for unless they, or its conversation, already keep
        `limits`' cap of active ones (`ScheduleRefused`, saying which); the count and the add
        are one transaction."""
        ...

    async def add_many(self, schedules: Sequence[Schedule]) -> None:
        """Add schedules in one transaction (an import, a benchmark)."""
        ...

    async def keep_configured(self, schedules: Sequence[Schedule]) -> None:
        """Make the named (configured) schedules these: added, updated, the others cancelled."""
        ...

    async def get(self, schedule_id: str) -> Schedule | None:
        ...

    async def listed(self, *, conversation_id: str | None = None,
                   states: Sequence[State] = ("active",), limit: int = 100) -> list[Schedule]:
        """Schedules (of one conversation, or all), the soonest first."""
        ...

    async def cancel(self, schedule_id: str) -> bool:
        """Stop an active schedule; False when there is none by that id (or it ended)."""
        ...

    async def claim_due(self, now: datetime, *, limit: int = 100, late_after: float = 60.0,
                        grace: float = 86_400.0) -> list[Firing]:
        """Claim the schedules due at `now` and record their turns in the inbox (one
        transaction); what this process claimed."""
        ...

    async def next_due(self) -> datetime | None:
        """When the soonest active schedule falls due."""
        ...
