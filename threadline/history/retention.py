"""History retention: turns older than `history.retention_days` are deleted in the background.

The lifetime is set for all conversations and per conversation id or workspace
(`retention_days_for`: `slack:T123` covers that team's channels, threads and DMs; a full
conversation id covers one). The longest matching key wins, so a workspace can keep less than
the default and one of its channels more. `HistoryRetention` prunes once at start and then every
`prune_every_minutes` while `threadline run` runs, logging its progress; `threadline history
prune` deletes by hand with one cutoff for all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import partial

import structlog

from threadline.history.beside import parts_beside
from threadline.history.files import kept_files
from threadline.history.model import utc_now
from threadline.history.store import ConversationStore
from threadline.periodic import Periodic

log = structlog.get_logger("threadline.retention")

BATCH = 500
ALL_CONVERSATIONS = 1_000_000_000
PROGRESS_EVERY = 5.0  # seconds between progress lines of one pass


def retention_days(conversation_id: str, default: float | None,
                   per_key: Mapping[str, float | None]) -> float | None:
    """The days a conversation's turns are kept: its longest matching key's, else `default`."""
    matching = [key for key in per_key
                if conversation_id == key or conversation_id.startswith(key + ":")]
    return per_key[max(matching, key=len)] if matching else default


async def prune_conversation(store: ConversationStore, conversation_id: str,
                             cutoff: datetime) -> int:
    """Delete a conversation's turns (summaries too) from before `cutoff`, in batches."""
    removed = 0
    while True:
        old = await store.get(conversation_id, before=cutoff, limit=BATCH, include_summaries=True)
        if not old:
            return removed
        removed += await store.delete_messages(conversation_id, [m.id for m in old])
        files = parts_beside(store).files
        if files is not None:
            await files.forget_unused(f.sha256 for f in kept_files(old))


async def prune_history(store: ConversationStore, default: float | None,
                        per_key: Mapping[str, float | None], *,
                        now: datetime | None = None) -> int:
    """One pass over every conversation; returns how many turns went."""
    now = now or utc_now()
    conversations = await store.list_conversations(limit=ALL_CONVERSATIONS)
    removed = 0
    last = time.monotonic()
    for index, info in enumerate(conversations, start=1):
        days = retention_days(info.conversation_id, default, per_key)
        if days is not None:
            removed += await prune_conversation(store, info.conversation_id,
                                                now - timedelta(days=days))
        if time.monotonic() - last >= PROGRESS_EVERY:
            last = time.monotonic()
            log.info("history.retention.progress", conversations=index,
                     of=len(conversations), removed=removed)
    log.info("history.retention.done", conversations=len(conversations), removed=removed)
    return removed


class HistoryRetention(Periodic):
    """Prunes expired turns now and then every `every` seconds, in the background (when any
    retention is set)."""

    def __init__(self, store: ConversationStore, default: float | None,
                 per_key: Mapping[str, float | None], *, every: float) -> None:
        super().__init__(partial(prune_history, store, default, dict(per_key)), every=every,
                         name="history.retention")
        self.configured = default is not None or any(v is not None for v in per_key.values())

    def start(self) -> None:
        if self.configured:
            super().start()
