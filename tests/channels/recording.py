"""A `ChannelEvents` for channel tests: stores each inbound turn in a real store and replies.

It stands where the runtime's team of agents will stand, so an adapter can be tested end to end
(platform event -> normalized message -> stored -> reply posted) before agents are involved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from threadline.channels.base import Channel
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore


class RecordingEvents:
    def __init__(
        self,
        store: ConversationStore,
        reply: Callable[[StoredMessage], str | None] = lambda m: f"echo: {m.content}",
    ) -> None:
        self.store = store
        self.reply = reply
        self.inbound: asyncio.Queue[StoredMessage] = asyncio.Queue()
        self.sent: list[list[str]] = []
        self.edits: list[tuple[str, str, str]] = []
        self.deletes: list[tuple[str, str]] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        if not await self.store.append(message):
            return  # a redelivery: stored once, answered once
        await self.inbound.put(message)
        text = self.reply(message)
        if text is not None:
            self.sent.append(await channel.send_reply(message, text))

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        self.edits.append((conversation_id, message_id, content))
        await self.store.edit_message(conversation_id, message_id, content)

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        self.deletes.append((conversation_id, message_id))
        await self.store.delete_messages(conversation_id, [message_id])

    async def next_inbound(self) -> StoredMessage:
        """The next stored inbound turn; fails after 5 s rather than hanging a test."""
        async with asyncio.timeout(5.0):
            return await self.inbound.get()
