"""Telegram's update processor: one conversation's updates in arrival order (see intake.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from telegram.ext import BaseUpdateProcessor

from threadline.channels.intake import ConversationOrder


class ConversationOrderedProcessor(BaseUpdateProcessor):
    """A PTB update processor that serializes updates sharing a conversation key.

    PTB starts one task per update in arrival order; each waits here on its conversation's
    lock (asyncio locks are FIFO), so turns reach the store in the order Telegram sent them.
    """

    def __init__(
        self, max_concurrent_updates: int, conversation_key: Callable[[object], str | None]
    ) -> None:
        super().__init__(max_concurrent_updates)
        self._conversation_key = conversation_key
        self._order = ConversationOrder()

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = self._conversation_key(update)
        if key is None:
            await coroutine
        else:
            await self._order.run(key, coroutine)

    async def initialize(self) -> None:
        """Nothing to set up: locks are made on demand."""

    async def shutdown(self) -> None:
        """Nothing to release: PTB waits for in-flight updates before shutting down."""
