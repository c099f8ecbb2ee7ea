"""Capture: every inbound and outbound turn reaches the store, even when the store is down.

`CaptureInterceptor` is always the first interceptor of every agent. It appends the inbound turn
before the run and the outbound turn (with its tool activity) after it, through a
`DurableWriter`: when an append fails, the turn goes to the durable outbox (fsynced to disk)
and a background task replays the outbox in order, with backoff, until the store takes it. A
new turn arriving while the outbox holds others goes behind them (never ahead, which would
reorder the conversation) and wakes the replay at once; a writer that starts and finds a
leftover outbox replays it first. The store's duplicate protection makes every replay safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from weakref import WeakKeyDictionary

import structlog

from threadline.errors import ChannelError, ConfigError, InvalidMessageError
from threadline.history.model import StoredMessage
from threadline.history.sql_store import SqlConversationStore
from threadline.history.store import ConversationStore
from threadline.interceptors.base import CallNext, TurnContext
from threadline.interceptors.outbox import Outbox

if TYPE_CHECKING:
    from threadline.agents.agent import AgentResult

log = structlog.get_logger("threadline.capture")

Recorded = Literal["stored", "duplicate", "outboxed"]


def default_outbox_path(store: ConversationStore) -> Path | None:
    """Where a store's outbox lives by default: next to a SQLite file, or in the working folder.

    None for stores that are not persistent (the in-memory store): their turns do not outlive
    the process anyway.
    """
    if not isinstance(store, SqlConversationStore):
        return None
    if store.dialect == "sqlite" and store.url.database:
        return Path(f"{store.url.database}.outbox.jsonl")
    url = store.url.render_as_string(hide_password=True)
    return Path.cwd() / f"threadline-{hashlib.sha256(url.encode()).hexdigest()[:12]}.outbox.jsonl"


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

    def start(self) -> None:
        """Replay a leftover outbox (from a crash or an earlier outage) in the background."""
        if self.outbox is not None and self.outbox.has_pending():
            log.info("capture.outbox_found", path=str(self.outbox.path))
            self._kick()

    async def record(self, message: StoredMessage) -> Recorded:
        """Store one turn now if possible, otherwise durably in the outbox; never loses it."""
        if self.outbox is None or not self.outbox.has_pending():
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            delay = min(delay * 2, self.max_backoff)

    async def close(self) -> None:
        """Try one last replay, then stop the background task; what is left stays on disk."""
        if self.outbox is not None and self.outbox.has_pending():
            await self.replay()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


_writers: WeakKeyDictionary[ConversationStore, DurableWriter] = WeakKeyDictionary()


def writer_for(store: ConversationStore, outbox_path: str | Path | None = None) -> DurableWriter:
    """The one writer of a store in this process, shared by every agent that uses the store.

    One writer per store keeps a single replay order and a single outbox file; asking for a
    different outbox path for the same store is a configuration error.
    """
    path = Path(outbox_path) if outbox_path is not None else default_outbox_path(store)
    writer = _writers.get(store)
    if writer is not None:
        current = writer.outbox.path if writer.outbox else None
        if outbox_path is not None and current != path:
            raise ConfigError(
                f"the conversation store already writes its outbox to {current}; every agent on "
                f"one store must use the same outbox_path (got {path})"
            )
        return writer
    writer = DurableWriter(store, Outbox(path) if path is not None else None)
    _writers[store] = writer
    return writer


class CaptureInterceptor:
    """Stores the inbound turn before the run and the outbound turn after it.

    With a `deliver` in the context, the reply is posted first and then stored with the
    platform's message id, so a later reply to it reaches the agent that wrote it.

    Why it exists: the shared history is the product. Every turn any agent sees or says must
    land in the store, in order, exactly once, even across a database outage; and a store
    problem must never cost the user their reply.
    """

    def __init__(self, writer: DurableWriter) -> None:
        self.writer = writer

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        if not context.inbound_recorded:
            await self.writer.record(context.inbound)
        result = await call_next()
        if result.outbound is None:
            return result
        if context.deliver is not None and result.output:
            ids = await self._deliver(context, result.output)
            if ids:
                result = replace(result, delivered_ids=tuple(ids),
                                 outbound=with_platform_ids(result.outbound, ids))
        assert result.outbound is not None
        await self.writer.record(result.outbound)
        return result

    @staticmethod
    async def _deliver(context: TurnContext, text: str) -> list[str]:
        """Post the reply; a platform failure is logged and the turn is still recorded."""
        assert context.deliver is not None
        try:
            return await context.deliver(text)
        except ChannelError as exc:
            context.log.error("capture.delivery_failed", error=str(exc),
                              error_type=type(exc).__name__)
            return []


def with_platform_ids(message: StoredMessage, ids: Sequence[str]) -> StoredMessage:
    """The turn as posted: the first part's platform id, and every part's when it was split."""
    extra = {**message.metadata.extra, "part_ids": list(ids)} if len(ids) > 1 else (
        message.metadata.extra)
    return replace(message, metadata=replace(message.metadata, message_id=ids[0], extra=extra))
