"""The `http` channel: signed webhooks in, replies out to a callback or fetched by cursor.

    POST {path}            a message (signed; `inbound.turn_from` reads it) -> 202 once recorded
    GET  {path}/replies    replies after a cursor (signed over the request target)

Each request is checked in this order, and refused with a JSON body saying what was wrong and
what to do (`{"error": CODE, "message": ...}`): its size (413), its signature and timestamp
(401, `signing.RequestVerifier`), its body (400, or 413 for a text over `max_text_chars`).
A message is answered 202 only once the turn is durably recorded (`ChannelEvents.on_message`);
when it could not be, 503, and the sender retries with the same `message_id`, which the
inbox takes as the same turn. Replies are kept in the outbox (`outbox`) and posted from there
(`callback`), so a callback that is down loses nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable

import aiohttp
import structlog
from aiohttp import web

from threadline.channels.base import BotIdentity, Channel, ChannelEvents
from threadline.channels.http.callback import CallbackPolicy, CallbackSender
from threadline.channels.http.inbound import CHANNEL_TYPE, BadRequest, turn_from
from threadline.channels.http.outbox import HttpReply, MemoryReplyOutbox, ReplyOutbox
from threadline.channels.http.signing import RequestVerifier
from threadline.channels.unreachable import unreachable
from threadline.errors import (
    ChannelError,
    InvalidMessageError,
    StoreError,
    TurnNotRecordedError,
)
from threadline.history.model import MessageMetadata, StoredMessage
from threadline.listening import Listener, serve
from threadline.periodic import Periodic

log = structlog.get_logger("threadline.channels.http")
MAX_FETCH = 500
MIN_SECRET_CHARS = 24
PRUNE_EVERY_SECONDS = 3600.0


def _refused(status: int, code: str, message: str, *, channel: str) -> web.Response:
    log.warning("http.request_refused", channel=channel, status=status, error=code,
                reason=message)
    return web.json_response({"error": code, "message": message}, status=status)


class HttpChannel(Channel):
    """One webhook endpoint and its callback (see the module docstring)."""

    channel_type = CHANNEL_TYPE
    max_message_chars = 1_000_000  # a reply goes out whole: JSON has no length limit

    def __init__(self, *, name: str, secret: str, host: str = "127.0.0.1", port: int = 0,
                 path: str = "/http/messages", callback: CallbackPolicy | None = None,
                 outbox: ReplyOutbox | None = None, replay_window_seconds: float = 300,
                 max_body_bytes: int = 262_144, max_text_chars: int = 16_000,
                 keep_replies_seconds: float = 30 * 86_400, allow_bots: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(name=name, allow_bots=allow_bots, streaming=False)
        self._host, self._port, self._path = host, port, path.rstrip("/") or "/"
        self._secret_chars = len(secret)
        self._verifier = RequestVerifier(secret, replay_window_seconds=replay_window_seconds,
                                         clock=clock)
        self._callback = callback
        self._kept_in_process = outbox is None
        self._outbox: ReplyOutbox = outbox if outbox is not None else MemoryReplyOutbox()
        self._max_body_bytes = max_body_bytes
        self._max_text_chars = max_text_chars
        self._keep_replies_seconds = keep_replies_seconds
        self._pruning = Periodic(self._prune, every=PRUNE_EVERY_SECONDS,
                                 name="http.replies_pruned")
        self._clock = clock
        self._events: ChannelEvents | None = None
        self._runner: web.AppRunner | None = None
        self._sender: CallbackSender | None = None
        self._recording = 0  # requests whose turn is being recorded; `stop` waits for them
        self._idle = asyncio.Event()
        self._idle.set()
        self._log = log.bind(channel=name)

    @property
    def url(self) -> str:
        """Where messages are posted (with the port actually bound), once started."""
        if self._runner is None or not self._runner.addresses:
            raise ChannelError(f"http channel {self.name!r} is not serving; start() it first")
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}{self._path}"

    def listeners(self) -> list[Listener]:
        return [Listener(self._host, self._port, f"channels.{self.name}.port",
                         f"channels.{self.name}.host")]

    async def check(self) -> list[str]:
        """A secret short enough to guess, and a callback that does not answer HTTP (any
        status will do: something is there); nothing else can fail before a request."""
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        problems = [] if self._secret_chars >= MIN_SECRET_CHARS else [
            f"http channel {self.name!r}: the secret is {self._secret_chars} characters; use "
            f"at least {MIN_SECRET_CHARS} (for example `openssl rand -hex 32`)"]
        if self._callback is None:
            return problems
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(
                    total=self._callback.timeout_seconds)) as session, \
                    session.head(self._callback.url, allow_redirects=False):
                return problems
        except (aiohttp.ClientError, TimeoutError) as exc:
            return [*problems, unreachable(
                where=f"http channel {self.name!r}", service="the callback",
                action="deliver replies", url=self._callback.url,
                setting=f"channels.{self.name}.callback_url", error=exc)
                + " Replies wait in the outbox meanwhile."]

    async def start(self, events: ChannelEvents) -> None:
        if self._runner is not None:
            raise ChannelError(f"http channel {self.name!r} is already started")
        self.identity = BotIdentity(user_id=f"{self.name}-bot", username=self.name)
        self._events = events
        server = web.Application(client_max_size=self._max_body_bytes)
        server.router.add_post(self._path, self._receive)
        server.router.add_get(f"{self._path.rstrip('/')}/replies", self._fetch)
        self._runner = web.AppRunner(server, access_log=None)
        await self._runner.setup()
        try:
            await serve(self._runner, self.listeners()[0])
        except BaseException:
            await self.stop()
            raise
        self._pruning.start()
        if self._callback is not None:
            self._sender = CallbackSender(channel=self.name, outbox=self._outbox,
                                          policy=self._callback, clock=self._clock)
            self._sender.start()
            if self._kept_in_process:
                self._log.warning("http.replies_kept_in_process",
                                  outcome="replies waiting for a callback that is down are "
                                          "lost at restart: the backend keeps no http outbox")
        self._log.info("http.listening", url=self.url,
                       callback=self._callback.url if self._callback else None)

    async def stop(self) -> None:
        self._events = None  # from now on messages are refused (503), so senders retry
        await self._idle.wait()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._pruning.stop()
        if self._sender is not None:
            await self._sender.stop()
            self._sender = None

    async def _prune(self) -> None:
        """Delete replies kept longer than `keep_replies_seconds` (see `outbox`)."""
        before_us = int((self._clock() - self._keep_replies_seconds) * 1_000_000)
        gone = await self._outbox.prune(self.name, before_us=before_us,
                                        delivered_only=self._callback is not None)
        if gone:
            self._log.info("http.old_replies_deleted", replies=gone)

    def receiving(self) -> str | None:
        if self._runner is None:
            return "not receiving: the webhook endpoint is not served"
        return None

    async def _receive(self, request: web.Request) -> web.Response:
        if (request.content_length or 0) > self._max_body_bytes:
            return self._too_large()
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large()
        refusal = self._verifier.refusal(request.headers, body)
        if refusal is not None:
            return _refused(401, refusal.code, refusal.message, channel=self.name)
        try:
            turn = turn_from(body, channel=self.name, max_text_chars=self._max_text_chars,
                             idempotency_key=request.headers.get("Idempotency-Key"))
        except InvalidMessageError as exc:
            turn = BadRequest(400, "malformed_body", str(exc))
        if isinstance(turn, BadRequest):  # signed, so the caller's: counted in /metrics
            self.skip_event(request.headers.get("Idempotency-Key", "-"), turn.code)
            return _refused(turn.status, turn.code, turn.message, channel=self.name)
        return await self._record(turn)

    async def _record(self, turn: StoredMessage) -> web.Response:
        events = self._events
        if events is None:
            return _refused(503, "stopping", "the channel is stopping; send the message again "
                            "shortly (same message_id)", channel=self.name)
        self._recording += 1
        self._idle.clear()
        try:
            await events.on_message(turn, self)
        except TurnNotRecordedError as exc:
            self._log.error("http.turn_not_recorded", conversation_id=turn.conversation_id,
                            error=str(exc))
            return _refused(503, "not_recorded", "the message could not be recorded; send it "
                            "again later (same message_id)", channel=self.name)
        finally:
            self._recording -= 1
            if self._recording == 0:
                self._idle.set()
        return web.json_response({"accepted": True, "conversation_id": turn.metadata.channel_id,
                                  "message_id": turn.metadata.message_id}, status=202)

    def _too_large(self) -> web.Response:
        return _refused(413, "body_too_large", f"the body is over {self._max_body_bytes} bytes "
                        "(max_body_bytes); send a shorter message", channel=self.name)

    async def _fetch(self, request: web.Request) -> web.Response:
        refusal = self._verifier.refusal(request.headers, request.raw_path.encode())
        if refusal is not None:
            return _refused(401, refusal.code, refusal.message, channel=self.name)
        try:
            cursor = int(request.query.get("after", "0"))
            limit = min(int(request.query.get("limit", "100")), MAX_FETCH)
        except ValueError:
            return _refused(400, "bad_cursor", "after and limit must be whole numbers",
                            channel=self.name)
        try:
            replies = await self._outbox.after(
                self.name, cursor=cursor, limit=max(limit, 1),
                conversation_id=request.query.get("conversation_id"))
        except StoreError as exc:
            self._log.error("http.replies_unreadable", error=str(exc))
            return _refused(503, "unavailable", "the replies cannot be read now; fetch again "
                            "later from the same cursor", channel=self.name)
        return web.json_response({"replies": [r.wire() for r in replies],
                                  "next_cursor": replies[-1].cursor if replies else cursor})

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        """Keep the reply in the outbox (posted from there); its id is the platform id."""
        conversation = self.delivered_here(inbound)
        turn = inbound.metadata.message_id or inbound.id
        reply_id = hashlib.sha256(f"{inbound.id}\0{agent_name}\0{text}".encode()).hexdigest()
        try:
            kept = await self._outbox.keep(HttpReply(
                reply_id=reply_id[:32], channel=self.name, conversation_id=conversation,
                in_reply_to=turn, turn_id=inbound.id, agent=agent_name, text=text,
                created_us=int(self._clock() * 1_000_000)))
        except StoreError as exc:
            raise ChannelError(f"http channel {self.name!r} could not keep a reply to "
                               f"{inbound.conversation_id!r} for its caller: {exc}") from exc
        if self._sender is not None:
            self._sender.wake()
        return [kept.reply_id]

    def metadata_for(self, conversation_id: str) -> MessageMetadata:
        """`http:CHANNEL:CONVERSATION`: the channel's name, then the caller's id."""
        conversation, _ = self._conversation_parts(conversation_id, workspace=True)
        return MessageMetadata(channel_type=self.channel_type, channel_name=self.name,
                               channel_id=conversation)
