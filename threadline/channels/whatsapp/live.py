"""A WhatsApp reply while it is written: the customer's message marked read and "typing..."
shown while the agent works, then the text posted whole.

WhatsApp shows the typing indicator for up to 25 seconds or until the reply arrives, and a
business cannot edit what it sent, so nothing of the text is shown before it is finished; the
indicator is asked for again every `TYPING_RENEWAL` seconds while a long turn (tool calls, an
approval) runs. The same call marks the message read (the customer's blue ticks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from threadline.channels.base import LiveReply
from threadline.channels.live import Renewal
from threadline.history.model import StoredMessage

if TYPE_CHECKING:
    from threadline.channels.whatsapp.channel import WhatsAppChannel

log = structlog.get_logger("threadline.channels.whatsapp")

TYPING_RENEWAL = 20.0


class WhatsAppReply(LiveReply):
    """One reply: the message marked read and the typing indicator shown while the agent
    works (renewed every 20 s), then the text posted whole (WhatsApp has no edits)."""

    def __init__(self, *, channel: WhatsAppChannel, inbound: StoredMessage,
                 agent_name: str | None, typing: bool) -> None:
        self._channel, self._inbound, self._agent_name = channel, inbound, agent_name
        shows = typing and inbound.participant.kind == "user"
        self._typing = Renewal(lambda: channel.show_typing(inbound), every=TYPING_RENEWAL,
                               log=log.bind(conversation_id=inbound.conversation_id,
                                            agent=agent_name)) if shows else None

    async def working(self, activity: str | None = None) -> None:
        if self._typing is not None:
            self._typing.start()

    async def finish(self, text: str) -> list[str]:
        await self.close()
        return await self._channel.send_reply(self._inbound, text, agent_name=self._agent_name)

    async def close(self) -> None:
        if self._typing is not None:
            await self._typing.stop()
