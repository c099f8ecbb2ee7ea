"""How the Slack channel takes events in: once each, in order within a conversation.

Slack redelivers an event it thinks was acknowledged late (same `event_id`, with an
`X-Slack-Retry-Num` header) and bolt does not deduplicate, so `RecentIds` drops the copies.
Events of one conversation are handled one after another in arrival order (the store numbers
turns by arrival, and an edit must follow the message it edits, even when the first message
waits on a display-name lookup); different conversations run concurrently.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field


class RecentIds:
    """A bounded memory of recently seen ids, to drop redelivered events."""

    def __init__(self, *, size: int = 10_000) -> None:
        self._size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def seen(self, key: str) -> bool:
        """True if `key` was seen before; remembers it either way."""
        if key in self._ids:
            self._ids.move_to_end(key)
            return True
        self._ids[key] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return False


@dataclass(slots=True)
class _Turnstile:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0


class ConversationOrder:
    """Runs work for one conversation one at a time, in the order it was submitted.

    `run` must be entered in arrival order (call it first thing in the event's task, before
    any other await); asyncio locks are FIFO, so that order is kept. A conversation's lock
    exists only while it has work in flight, so memory stays bounded.
    """

    def __init__(self) -> None:
        self._turnstiles: dict[str, _Turnstile] = {}

    async def run(self, conversation_id: str, work: Awaitable[None]) -> None:
        turnstile = self._turnstiles.setdefault(conversation_id, _Turnstile())
        turnstile.waiting += 1
        try:
            async with turnstile.lock:
                await work
        finally:
            turnstile.waiting -= 1
            if turnstile.waiting == 0:
                del self._turnstiles[conversation_id]
