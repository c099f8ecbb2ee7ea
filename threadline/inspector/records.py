"""Reply records: what a keeper of them must do (`ReplyRecords`), and the memory backend's.

A backend gives its keeper as its `records` part (`threadline.backends`): the SQL backend's
lives in the history's own database (`threadline.backends.sql.records`), so records are kept
and backed up with the history. `InMemoryReplyRecords` keeps the newest `max_records` records
of the memory backend, which forgets them at exit like its history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from threadline.channels.delivery_status import DeliveryStatuses, PartStatus, advanced
from threadline.inspector.record import ReplyRecord


class Recordable(Protocol):
    """A finished turn that becomes a record when written (built off the turn's path)."""

    def to_record(self) -> ReplyRecord: ...


@dataclass(frozen=True, slots=True)
class RecordedConversation:
    """A conversation as the inspector lists it: how many replies were recorded, and when."""

    conversation_id: str
    replies: int
    last_reply: datetime


class ReplyRecords(DeliveryStatuses, Protocol):
    """Keeps reply records. Listings return records without `detail`; `get` returns it whole.
    A platform's delivery statuses are kept on them (`note_delivery`)."""

    async def add(self, pending: Sequence[Recordable]) -> int:
        """Build and store records for finished turns, in one write; returns how many."""
        ...

    async def recent(self, conversation_id: str | None = None, *, agent: str | None = None,
                     since: datetime | None = None, limit: int = 50) -> list[ReplyRecord]:
        """Newest first, optionally of one conversation or agent, or since a moment."""
        ...

    async def get(self, record_id: str) -> ReplyRecord | None:
        """One record with its detail, by id or by an unambiguous id prefix (8+ characters)."""
        ...

    async def conversations(self, *, limit: int = 100) -> list[RecordedConversation]:
        """Conversations with recorded replies, most recently answered first."""
        ...

    async def prune(self, before: datetime) -> int:
        """Delete the records made before `before`; returns how many went."""
        ...


MIN_PREFIX = 8


class InMemoryReplyRecords:
    """The newest `max_records` records, in process memory (for the in-memory store)."""

    def __init__(self, max_records: int = 1000) -> None:
        self._records: deque[ReplyRecord] = deque(maxlen=max_records)

    async def add(self, pending: Sequence[Recordable]) -> int:
        self._records.extend(p.to_record() for p in pending)
        return len(pending)

    async def recent(self, conversation_id: str | None = None, *, agent: str | None = None,
                     since: datetime | None = None, limit: int = 50) -> list[ReplyRecord]:
        found = [replace(r, detail=None) for r in reversed(self._records)
                 if (conversation_id is None or r.conversation_id == conversation_id)
                 and (agent is None or r.agent == agent)
                 and (since is None or r.created_at >= since)]
        return found[:limit]

    async def get(self, record_id: str) -> ReplyRecord | None:
        matches = [r for r in self._records if r.id == record_id
                   or (len(record_id) >= MIN_PREFIX and r.id.startswith(record_id))]
        return matches[0] if len(matches) == 1 else None

    async def conversations(self, *, limit: int = 100) -> list[RecordedConversation]:
        seen: dict[str, RecordedConversation] = {}
        for record in self._records:
            known = seen.get(record.conversation_id)
            seen[record.conversation_id] = RecordedConversation(
                record.conversation_id, (known.replies if known else 0) + 1, record.created_at)
        return sorted(seen.values(), key=lambda c: c.last_reply, reverse=True)[:limit]

    async def note_delivery(self, conversation_id: str, platform_id: str,
                            status: PartStatus) -> bool:
        for index in range(len(self._records) - 1, -1, -1):
            record = self._records[index]
            if record.conversation_id == conversation_id and platform_id in (
                    (record.detail or {}).get("delivered_ids") or ()):
                statuses = advanced(record.delivery_status, platform_id, status)
                if statuses is None:
                    return False
                self._records[index] = replace(record, delivery_status=statuses)
                return True
        return False

    async def prune(self, before: datetime) -> int:
        kept = [r for r in self._records if r.created_at >= before]
        removed = len(self._records) - len(kept)
        self._records.clear()
        self._records.extend(kept)
        return removed


# -- SQL -------------------------------------------------------------------------------------
