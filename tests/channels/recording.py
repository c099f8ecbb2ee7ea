"""A `ChannelEvents` for channel tests: records each inbound turn in a real store, then answers.

It stands where the runtime's turn pipeline stands and keeps the same contract (see
`ChannelEvents`): `on_message` returns once the turn is stored, or raises
`TurnNotRecordedError` when the store failed; the reply is posted afterwards by a background
worker that answers turns one at a time in arrival order. A redelivered message (same stored
id) is not answered again. `refuse` lets a test make recording fail for chosen messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from threadline.channels.base import Channel
from threadline.channels.catch_up import last_heard
from threadline.errors import TurnNotRecordedError
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
        self.refuse: Callable[[StoredMessage], bool] = lambda m: False
        self.inbound: asyncio.Queue[StoredMessage] = asyncio.Queue()
        self.sent: list[list[str]] = []
        self.reply_failures: list[BaseException] = []
        self.edits: list[tuple[str, str, str]] = []
        self.deletes: list[tuple[str, str]] = []
        self.contexts: list[StoredMessage] = []
        self._to_answer: asyncio.Queue[tuple[StoredMessage, Channel]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        if self.refuse(message):
            raise TurnNotRecordedError(f"test refused to record {message.id}")
        if not await self.store.append(message):
            return  # a redelivery: recorded once, answered once
        await self.inbound.put(message)
        if self.reply(message) is not None:
            self._to_answer.put_nowait((message, channel))
            if self._worker is None or self._worker.done():
                self._worker = asyncio.create_task(self._answer_in_order())

    async def _answer_in_order(self) -> None:
        while not self._to_answer.empty():  # no task lingers once everything is answered
            message, channel = self._to_answer.get_nowait()
            try:
                text = self.reply(message)
                if text is not None:
                    self.sent.append(await channel.send_reply(message, text))
            except Exception as error:
                self.reply_failures.append(error)
            finally:
                self._to_answer.task_done()

    async def drain(self) -> None:
        """Wait until every recorded turn has been answered (fails after 5 s, not hangs)."""
        async with asyncio.timeout(5.0):
            await self._to_answer.join()

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        self.edits.append((conversation_id, message_id, content))
        await self.store.edit_message(conversation_id, message_id, content)

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        self.deletes.append((conversation_id, message_id))
        await self.store.delete_messages(conversation_id, [message_id])

    async def on_context(self, message: StoredMessage) -> None:
        self.contexts.append(message)
        await self.store.append(message)

    async def last_heard(self, prefix: str, since: datetime, before: datetime | None
                         ) -> list[StoredMessage]:
        return await last_heard(self.store, prefix=prefix, since=since, before=before)

    async def next_inbound(self) -> StoredMessage:
        """The next stored inbound turn; fails after 5 s rather than hanging a test."""
        async with asyncio.timeout(5.0):
            return await self.inbound.get()
