"""The web channel: a chat widget any website embeds with one `<script>` tag, served by
`threadline run` on its own port.

Each visitor is one direct conversation with the bot, `web:VISITOR` (see `visitors` for who a
visitor is). A message the browser sends carries an id the browser made (`web:VISITOR:ID` once
stored), so a message sent again after a dropped connection is the same turn; the answer is
`202` only once the turn is durable (`ChannelEvents.on_message`), and a browser that heard
nothing sends it again. Replies reach the browser over Server-Sent Events (`stream`): the
stored turns of the conversation, and the replies being written (`replies.ReplyBoard`).

The server's routes (`server`) are the widget's script, a chat page of its own, and the API the
widget speaks: `POST /api/session`, `POST /api/messages`, `GET /api/events`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog
from aiohttp import web

from threadline.channels.base import BotIdentity, Channel, ChannelEvents, LiveReply
from threadline.channels.files import IncomingFile, take_in
from threadline.channels.live import RateGate
from threadline.channels.web.replies import FeedbackOffer, ReplyBoard, WebLiveReply
from threadline.channels.web.stream import TYPED
from threadline.channels.web.visitors import Visitor
from threadline.commands import CommandChoice
from threadline.errors import ChannelError
from threadline.history.addressing import mentions_in_text
from threadline.history.changes import Unsubscribe
from threadline.history.files import TurnFile
from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    new_message_id,
)
from threadline.history.store import ConversationStore
from threadline.listening import Listener, serve

if TYPE_CHECKING:
    from threadline.channels.web.settings import WebSettings

log = structlog.get_logger("threadline.channels.web")
CHANNEL_TYPE = "web"


class WebChannel(Channel):
    """The widget's server and the conversations of its visitors (see the module docstring)."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 100_000  # a browser shows a long reply whole; never split

    def __init__(self, *, name: str, settings: WebSettings,
                 history: ConversationStore | None = None) -> None:
        super().__init__(name=name, allow_bots=settings.allow_bots,
                         streaming=settings.streaming)
        self.settings = settings
        self.history = history
        self.board = ReplyBoard()
        self._gate = RateGate(settings.stream_interval)
        self._events: ChannelEvents | None = None
        self._runner: web.AppRunner | None = None
        self._unsubscribe: Unsubscribe | None = None
        self.port: int | None = None  # bound at start (port 0 picks one)

    @property
    def base_url(self) -> str:
        """Where browsers reach this server: `public_url`, else the address bound."""
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        host = self.settings.listen if self.settings.listen not in ("0.0.0.0", "::") else (
            "127.0.0.1")
        return f"http://{host}:{self.port if self.port is not None else self.settings.port}"

    def listeners(self) -> list[Listener]:
        return [Listener(self.settings.listen, self.settings.port,
                         f"channels.{self.name}.port", f"channels.{self.name}.listen")]

    async def check(self) -> list[str]:
        """What would keep visitors from chatting, in words; learns the bot's identity."""
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        problems = []
        if not self.settings.origins:
            problems.append(
                f"web channel {self.name!r} allows no site's pages (origins is empty): only "
                f"its own chat page at {self.base_url}/ works; list the sites that embed the "
                "widget under origins (for example https://www.example.com)")
        return problems

    async def start(self, events: ChannelEvents) -> None:
        from threadline.channels.web.server import widget_app  # aiohttp routes

        if self.history is None:
            raise ChannelError(f"web channel {self.name!r} needs the conversation history (a "
                               "visitor's transcript is read from it); build it through the "
                               "runtime, or pass history=")
        await self.check()
        self._events = events
        self._unsubscribe = self.history.subscribe(self.board.heard)
        self._runner = web.AppRunner(widget_app(self), access_log=None)
        await self._runner.setup()
        self.port = await serve(self._runner, self.listeners()[0])
        log.info("web.serving", channel=self.name, url=self.base_url,
                 snippet=f'<script src="{self.base_url}/widget.js" async></script>')

    async def stop(self) -> None:
        self._events = None
        self.board.close_all()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    def receiving(self) -> str | None:
        if self._runner is None or self._events is None:
            return "not receiving: the widget's server is not running"
        return None

    def turn(self, visitor: Visitor, *, message_id: str, text: str) -> StoredMessage:
        """The inbound turn for one message a visitor sent, its id derived from the browser's."""
        return StoredMessage(
            conversation_id=visitor.conversation_id,
            id=f"{visitor.conversation_id}:{message_id}",
            participant=Participant(kind="user", id=visitor.visitor_id,
                                    display_name=visitor.name),
            content=text, scope="dm",
            metadata=MessageMetadata(
                channel_type=CHANNEL_TYPE, channel_name=self.name,
                channel_id=visitor.visitor_id, message_id=message_id,
                mentions=tuple(mentions_in_text(text)), extra={TYPED: text}))

    async def accept(self, visitor: Visitor, *, message_id: str, text: str,
                     files: Sequence[IncomingFile]) -> StoredMessage:
        """Record one message (its files kept first); returns once it is durable.

        Raises `TurnNotRecordedError` when it could not be recorded (the browser sends it
        again), `ChannelError` when the channel is stopping."""
        events = self._events
        if events is None:
            raise ChannelError(f"web channel {self.name!r} is stopping; send the message again")
        turn = await take_in(self.turn(visitor, message_id=message_id, text=text), files,
                             self.file_intake)
        await events.on_message(turn, self)
        return turn

    def open_reply(self, inbound: StoredMessage, *, agent_name: str | None = None) -> LiveReply:
        self.delivered_here(inbound)
        return WebLiveReply(board=self.board, inbound=inbound, agent_name=agent_name,
                            gate=self._gate, log=log.bind(channel=self.name))

    async def offer_feedback(self, reply: StoredMessage, platform_ids: Sequence[str],
                             choices: Sequence[CommandChoice]) -> bool:
        """The buttons under the reply in the visitor's widget (a `feedback` event); a press
        posts the button's command as that visitor's message (`POST /api/messages`, the
        session and every check of a message)."""
        self.delivered_here(reply)
        self.board.offer(reply.conversation_id, FeedbackOffer(reply.id, tuple(choices)))
        return True

    async def _upload(self, inbound: StoredMessage, file: TurnFile, data: bytes) -> list[str]:
        """A file an agent's tool made: its bytes are kept already, and the stored reply names
        it, so the visitor's stream offers it (`GET /api/files/SHA256`); nothing to send."""
        self.delivered_here(inbound)
        return [f"file:{file.sha256}"]

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        """A reply posted whole (a command's answer, a reply when streaming is off): the
        visitor sees it as the stored turn the pipeline records next, under that turn's own id
        (which a command's answer does not share with `reply_turn_id`), so it shows once.

        A command's private text (a link code) is therefore shown as kept: masked."""
        self.delivered_here(inbound)
        return [new_message_id()]
