"""How the Telegram channel takes updates in: once each, in order within a conversation.

Telegram hands a bot the same `update_id` twice when a webhook delivery is retried or a poller
restarts before confirming its offset, so `RecentUpdateIds` drops the second copy. Updates of
one conversation run one after another in arrival order (the store numbers turns by arrival, and
an edit must follow the message it edits); different conversations run concurrently.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from telegram.ext import BaseUpdateProcessor


class RecentUpdateIds:
    """A bounded memory of the update ids seen lately; `add` says whether one is new."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._seen: OrderedDict[int, None] = OrderedDict()

    def add(self, update_id: int) -> bool:
        """Remember `update_id`; False if it was already seen (a redelivery)."""
        if update_id in self._seen:
            self._seen.move_to_end(update_id)
            return False
        self._seen[update_id] = None
        if len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True


@dataclass
class _ConversationLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ConversationOrderedProcessor(BaseUpdateProcessor):
    """A PTB update processor that serializes updates sharing a conversation key.

    PTB starts one task per update in arrival order; each waits here on its conversation's
    lock (asyncio locks are FIFO), so turns reach the store in the order Telegram sent them.
    Locks exist only while a conversation has updates in flight, so memory stays bounded.
    """

    def __init__(
        self, max_concurrent_updates: int, conversation_key: Callable[[object], str | None]
    ) -> None:
        super().__init__(max_concurrent_updates)
        self._conversation_key = conversation_key
        self._locks: dict[str, _ConversationLock] = {}

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = self._conversation_key(update)
        if key is None:
            await coroutine
            return
        entry = self._locks.setdefault(key, _ConversationLock())
        entry.users += 1
        try:
            async with entry.lock:
                await coroutine
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._locks[key]

    async def initialize(self) -> None:
        """Nothing to set up: locks are made on demand."""

    async def shutdown(self) -> None:
        """Nothing to release: PTB waits for in-flight updates before shutting down."""
