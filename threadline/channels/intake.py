"""How every channel takes events in: once each, and in arrival order within a conversation.

Platforms redeliver: Slack retries an event it thinks was acknowledged late (same `event_id`),
Telegram hands out an `update_id` again after a webhook retry or a poller restart, Discord
replays after a resume. `RecentKeys` drops the copies. Events of one conversation are handled
one after another in arrival order (the store numbers turns by arrival, and an edit must follow
the message it edits); different conversations run concurrently (`ConversationOrder`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Hashable
from typing import TypeVar

from threadline.locks import LocalConversationLock

T = TypeVar("T")


class RecentKeys:
    """A bounded memory of recently seen event keys: the first sighting wins."""

    def __init__(self, size: int = 10_000) -> None:
        self._size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def first_sighting(self, key: Hashable) -> bool:
        """True the first time `key` is seen (among the last `size` keys); remembers it."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return False
        self._keys[key] = None
        if len(self._keys) > self._size:
            self._keys.popitem(last=False)
        return True

    def forget(self, key: Hashable) -> None:
        """Let a redelivery of `key` through again (its first handling failed)."""
        self._keys.pop(key, None)


class ConversationOrder:
    """Runs work for one conversation one at a time, in the order it was submitted.

    `run` must be entered in arrival order (call it first thing in the event's task, before
    any other await); the lock underneath is FIFO, so that order is kept.
    """

    def __init__(self) -> None:
        self._lock = LocalConversationLock()

    async def run(self, conversation_id: str, work: Awaitable[T]) -> T:
        async with self._lock.hold(conversation_id):
            return await work
