"""A Telegram reply written live: `typing` while the agent works, the text as the model writes it.

Status: the `typing` chat action, renewed every `TYPING_RENEWAL` seconds (Telegram shows it for
at most 5) from the start of the turn until the reply is finished, tool calls included.

Text, when streaming is on: in private chats a message draft (`sendMessageDraft`, Bot API 9.3+:
an animated preview that ends with the real message, sent whole at the end); where Telegram
refuses drafts, and in groups, one message posted with the first text and edited as the text
grows, its final edit being the whole reply (further parts, beyond 4,096 characters, follow as
messages). Every draft, post and edit of a chat waits for its slot of the channel's per-chat
gate (`stream_interval`, one per second by default, Telegram's own per-chat limit), so a fast
model can never trip the flood limit; a 429 that comes anyway is waited out by PTB's rate
limiter, and the reply completes.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from telegram import Message
from telegram.constants import ChatAction
from telegram.error import BadRequest, TelegramError
from telegram.ext import ExtBot

from threadline.channels.base import LiveReply
from threadline.channels.live import RateGate, Renewal, TextPacer
from threadline.channels.text import split_text
from threadline.history.model import StoredMessage
from threadline.turn import reply_turn_id

if TYPE_CHECKING:
    from threadline.channels.telegram.channel import TelegramChannel

TYPING_RENEWAL = 4.0


def draft_id(inbound: StoredMessage, agent_name: str | None) -> int:
    """A non-zero draft id that is the same for every update of one reply."""
    return zlib.crc32(reply_turn_id(inbound, agent_name or "").encode()) or 1


class TelegramLiveReply(LiveReply):
    """One reply in one Telegram chat (see the module docstring)."""

    def __init__(self, *, channel: TelegramChannel, bot: ExtBot[Any], inbound: StoredMessage,
                 agent_name: str | None, gate: RateGate, log: Any) -> None:
        meta = inbound.metadata
        self._channel = channel
        self._bot = bot
        self._inbound = inbound
        self._agent_name = agent_name
        self._chat_id, self._reply_to = channel.reply_target(inbound)
        self._topic = None if meta.thread_id is None else int(meta.thread_id)
        self._gate = gate
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        self._draft_id = draft_id(inbound, agent_name)
        self._drafts = inbound.scope == "dm"
        self._message: Message | None = None
        self._shown = ""
        self._pacer = TextPacer(self._push, gate=gate, key=str(self._chat_id), log=self._log)
        self._typing = Renewal(self._send_typing, every=TYPING_RENEWAL, log=self._log)

    async def working(self, activity: str | None = None) -> None:
        self._typing.start()

    def show(self, text: str) -> None:
        self._pacer.offer(split_text(text, self._channel.max_message_chars)[0])

    async def finish(self, text: str) -> list[str]:
        await self.close()
        async with self._gate.slot(str(self._chat_id)):
            if self._message is None:
                return await self._channel.send_reply(self._inbound, text,
                                                      agent_name=self._agent_name)
            return await self._finish_shown(self._message, text)

    async def _finish_shown(self, message: Message, text: str) -> list[str]:
        """The shown message edited to the first part of `text`; the other parts follow."""
        parts = split_text(text, self._channel.max_message_chars)
        posted = [str(message.message_id)]
        try:
            if parts[0] != self._shown:
                await self._bot.edit_message_text(parts[0], chat_id=self._chat_id,
                                                  message_id=message.message_id)
        except TelegramError as exc:
            raise self._channel.reply_failure(exc, inbound=self._inbound,
                                              action="finish a reply being written") from exc
        for part in parts[1:]:
            posted.extend(await self._channel.send_reply(self._inbound, part,
                                                         agent_name=self._agent_name))
        return posted

    async def close(self) -> None:
        await self._pacer.stop()
        await self._typing.stop()

    async def _send_typing(self) -> None:
        await self._bot.send_chat_action(self._chat_id, ChatAction.TYPING,
                                         message_thread_id=self._topic)

    async def _push(self, text: str) -> None:
        if self._drafts:
            try:
                await self._bot.send_message_draft(self._chat_id, self._draft_id, text,
                                                   message_thread_id=self._topic)
                return
            except BadRequest as exc:
                self._drafts = False
                self._log.info("telegram.draft_refused", error=exc.message,
                               outcome="the reply is posted and edited as it is written")
        if self._message is None:
            self._message = await self._bot.send_message(
                self._chat_id, text, message_thread_id=self._topic,
                reply_parameters=self._reply_to)
        else:
            await self._bot.edit_message_text(text, chat_id=self._chat_id,
                                              message_id=self._message.message_id)
        self._shown = text
