"""A Teams reply written live: the typing indicator while the agent works, then the text edited
in place as the model writes it.

Status: a `typing` activity, renewed every `TYPING_RENEWAL` seconds (Teams shows one for a few
seconds) from the start of the turn until the reply is finished, tool calls included.

Text, when streaming is on: one message posted with the first text and updated in place
(`PUT .../activities/{id}`) as it grows, at most once per `stream_interval` per chat, its last
update being the whole reply (further parts, beyond `max_message_chars`, follow as messages).
This works in every scope. Teams' own streaming protocol (`streaminfo` entities on typing
activities) exists for personal chats only and is not used: it would make 1:1 chats behave
unlike group chats and channels, and an interrupted stream cannot be finished after a restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from threadline.channels.base import LiveReply
from threadline.channels.live import RateGate, Renewal, TextPacer
from threadline.channels.text import split_text
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.teams.channel import TeamsChannel

TYPING_RENEWAL = 3.0


class TeamsLiveReply(LiveReply):
    """One reply in one Teams chat or channel thread (see the module docstring)."""

    def __init__(self, *, channel: TeamsChannel, inbound: StoredMessage,
                 agent_name: str | None, gate: RateGate, log: Any) -> None:
        self._channel = channel
        self._inbound = inbound
        self._agent_name = agent_name
        self._gate = gate
        self._key = inbound.conversation_id
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name)
        self._posted: str | None = None  # the activity id of the message being written
        self._shown = ""
        self._pacer = TextPacer(self._push, gate=gate, key=self._key, log=self._log)
        self._typing = Renewal(lambda: channel.typing(inbound), every=TYPING_RENEWAL,
                               log=self._log)

    async def working(self, activity: str | None = None) -> None:
        self._typing.start()

    def show(self, text: str) -> None:
        if self._channel.streaming:
            self._pacer.offer(split_text(text, self._channel.max_message_chars)[0])

    async def finish(self, text: str) -> list[str]:
        await self.close()
        async with self._gate.slot(self._key):
            if self._posted is None:
                return await self._channel.send_reply(self._inbound, text,
                                                      agent_name=self._agent_name)
            parts = split_text(text, self._channel.max_message_chars)
            if parts[0] != self._shown:
                await self._channel.update(self._inbound, self._posted, parts[0])
            rest = await self._channel.send_reply(self._inbound, "\n\n".join(parts[1:]),
                                                  agent_name=self._agent_name
                                                  ) if parts[1:] else []
            return [self._posted, *rest]

    async def close(self) -> None:
        await self._pacer.stop()
        await self._typing.stop()

    async def _push(self, text: str) -> None:
        if self._posted is None:
            [self._posted] = await self._channel.send_reply(self._inbound, text,
                                                            agent_name=self._agent_name)
        else:
            await self._channel.update(self._inbound, self._posted, text)
        self._shown = text
