"""A Discord reply written live: typing while the agent works, one message edited as text grows.

Status: Discord's typing indicator (`POST /channels/{id}/typing`, shown for 10 seconds),
renewed every `TYPING_RENEWAL` seconds until the reply is finished.

Text, when streaming is on: the first text is posted as a reply to the inbound message and
edited as the model writes, at most once per `stream_interval` per channel. Before a message
would pass Discord's 2,000 characters the text continues in a new message (cut where
`split_text` cuts, so the parts are those a whole reply would have), and the final text leaves
each message holding exactly its part; messages left over when a later round's text is
shorter are deleted. discord.py waits out 429s by the response headers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord

from threadline.channels.base import LiveReply
from threadline.channels.discord.client import BROADCAST
from threadline.channels.live import RateGate, Renewal, TextPacer
from threadline.channels.text import split_text
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.discord.channel import DiscordChannel

TYPING_RENEWAL = 8.0


class DiscordLiveReply(LiveReply):
    """One reply in one Discord channel or thread (see the module docstring)."""

    def __init__(self, *, channel: DiscordChannel, client: discord.Client,
                 inbound: StoredMessage, agent_name: str | None, gate: RateGate,
                 log: Any) -> None:
        self._channel = channel
        self._client = client
        self._inbound = inbound
        self._agent_name = agent_name
        self._target, self._reference = channel.reply_target(inbound)
        self._loud: dict[str, Any] = ({"allowed_mentions": BROADCAST}
                                      if channel.may_broadcast(inbound, agent_name) else {})
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        self._gate = gate
        self._messages: list[discord.Message] = []
        self._parts: list[str] = []  # what each message shows
        self._pacer = TextPacer(self._render, gate=gate, key=str(self._target.id),
                                log=self._log)
        self._typing = Renewal(self._send_typing, every=TYPING_RENEWAL, log=self._log)

    async def working(self, activity: str | None = None) -> None:
        self._typing.start()

    def show(self, text: str) -> None:
        self._pacer.offer(text)

    async def finish(self, text: str) -> list[str]:
        await self.close()
        if not self._messages:
            return await self._channel.send_reply(self._inbound, text,
                                                  agent_name=self._agent_name)
        try:
            async with self._gate.slot(str(self._target.id)):
                await self._render(text)
                parts = len(split_text(text, self._channel.max_message_chars))
                for extra in self._messages[parts:]:
                    await extra.delete()
                del self._messages[parts:]
        except discord.HTTPException as exc:
            raise self._channel.send_failure(exc, self._inbound, len(self._messages),
                                             self._log) from exc
        return [str(m.id) for m in self._messages]

    async def close(self) -> None:
        await self._pacer.stop()
        await self._typing.stop()

    async def _send_typing(self) -> None:
        await self._client.http.send_typing(self._target.id)

    async def _render(self, text: str) -> None:
        """Each part of `text` in its message: changed ones edited, new ones posted."""
        for index, part in enumerate(split_text(text, self._channel.max_message_chars)):
            if index < len(self._messages):
                if self._parts[index] != part:
                    self._messages[index] = await self._messages[index].edit(content=part)
                    self._parts[index] = part
                continue
            reply: dict[str, Any] = {
                **({"reference": self._reference} if not index and self._reference else {}),
                **self._loud}
            self._messages.append(await self._target.send(part, **reply))
            self._parts.append(part)
