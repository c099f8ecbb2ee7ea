"""Capture: every inbound and outbound turn reaches the store, even when the store is down.

Capture is the recording step of a turn, and always its first: the turn pipeline records each
inbound turn, and each reply once it is delivered, through the team's one `DurableWriter`; an
agent used on its own (`Agent.invoke`, no pipeline) records both turns with
`CaptureInterceptor`, its outermost interceptor, through the same kind of writer. Either way
there is one writer per store and each turn is written once. When an append fails, for any
store, built-in or custom, the turn goes to the
durable outbox (fsynced to disk) and a background task replays the outbox in order, with
backoff, until the store takes it. A new turn arriving while the outbox holds others goes
behind them (never ahead, which would reorder the conversation) and wakes the replay at once; a
writer that starts and finds a leftover outbox replays it first. The store's duplicate
protection makes every replay safe.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import structlog

from threadline.errors import InvalidMessageError
from threadline.history.beside import parts_beside
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.interceptors.base import CallNext
from threadline.interceptors.outbox import Outbox
from threadline.turn import AgentResult, TurnContext
from threadline.waiting import cancel_and_wait, set_within

log = structlog.get_logger("threadline.capture")

Recorded = Literal["stored", "duplicate", "outboxed"]


def default_outbox_path(store: ConversationStore) -> Path | None:
    """Where a store's outbox lives by default: where its backend keeps it (next to a SQLite
    file, say), None when it keeps none (the memory backend: its turns do not outlive the
    process anyway)."""
    return parts_beside(store).outbox_path


class DurableWriter:
    """Appends turns to a store, falling back to a durable outbox replayed in order."""

    def __init__(
        self,
        store: ConversationStore,
        outbox: Outbox | None,
        *,
        min_backoff: float = 0.05,
        max_backoff: float = 5.0,
        batch_size: int = 100,
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.batch_size = batch_size
        self._wake = asyncio.Event()
        self._replay_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def for_store(cls, store: ConversationStore, outbox_path: str | Path | None = None
                  ) -> DurableWriter:
        """A writer with the store's default outbox (see `default_outbox_path`) or `outbox_path`."""
        path = Path(outbox_path) if outbox_path is not None else default_outbox_path(store)
        return cls(store, Outbox(path) if path is not None else None)

    def start(self) -> None:
        """Replay a leftover outbox (from a crash or an earlier outage) in the background."""
        if self.outbox is not None and self.outbox.has_pending():
            log.info("capture.outbox_found", path=str(self.outbox.path))
            self._kick()

    def takes_now(self) -> bool:
        """Whether a turn recorded now would go to the store at once: no outbox, or one with
        nothing waiting (a new turn never goes ahead of those). A write made with the store's
        other writes (`threadline.after_delivery`) asks first."""
        return self.outbox is None or not self.outbox.has_pending()

    async def record(self, message: StoredMessage) -> Recorded:
        """Store one turn now if possible, otherwise durably in the outbox; never loses it.

        "duplicate" when the store already had it (a turn answered again after a crash)."""
        if self.outbox is None or not self.outbox.has_pending():  # `takes_now`
            try:
                return "stored" if await self.store.append(message) else "duplicate"
            except InvalidMessageError:
                raise  # a wrong turn stays wrong on every retry: the caller must hear of it
            except Exception as exc:
                if self.outbox is None:
                    raise
                log.warning("capture.append_failed", conversation_id=message.conversation_id,
                            message_id=message.id, error=str(exc))
        depth = await self.outbox.add([message])
        log.warning("capture.outboxed", conversation_id=message.conversation_id,
                    message_id=message.id, outbox_depth=depth, outbox=str(self.outbox.path))
        self._kick()
        return "outboxed"

    async def replay(self) -> bool:
        """Move outboxed turns into the store, oldest first; True when the outbox is empty."""
        if self.outbox is None:
            return True
        async with self._replay_lock:
            while True:
                pending = await self.outbox.pending()
                if not pending:
                    return True
                chunk = pending[: self.batch_size]
                try:
                    flags = await self.store.append_many(chunk)
                except Exception as exc:
                    log.warning("capture.replay_failed", outbox_depth=len(pending),
                                conversation_ids=sorted({m.conversation_id for m in chunk}),
                                error=str(exc))
                    return False
                depth = await self.outbox.remove([m.id for m in chunk])
                log.info("capture.replayed", count=len(chunk), duplicates=flags.count(False),
                         conversation_ids=sorted({m.conversation_id for m in chunk}),
                         outbox_depth=depth)

    def _kick(self) -> None:
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._replay_until_empty())

    async def _replay_until_empty(self) -> None:
        delay = self.min_backoff
        while True:
            self._wake.clear()
            if await self.replay():
                return
            # Retry after the backoff, or at once when a new turn arrives (it may find the
            # store back).
            await set_within(self._wake, delay)
            delay = min(delay * 2, self.max_backoff)

    async def close(self) -> None:
        """Try one last replay, then stop the background task; what is left stays on disk."""
        if self.outbox is not None and self.outbox.has_pending():
            await self.replay()
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None


class CaptureInterceptor:
    """Stores the inbound turn before the run and the outbound turn after it: the recording
    step of an agent used on its own (`Agent.invoke`); the turn pipeline records through the
    same writer itself, once per turn.

    Why it exists: the shared history is the product. Every turn any agent sees or says must
    land in the store, in order, exactly once, even across a database outage; and a store
    problem must never cost the user their reply.
    """

    def __init__(self, writer: DurableWriter) -> None:
        self.writer = writer

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        await self.writer.record(context.inbound)
        result = await call_next()
        if result.outbound is not None:
            await self.writer.record(result.outbound)
        return result
