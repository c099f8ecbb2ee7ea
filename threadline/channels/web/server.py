"""The widget's HTTP routes: its script, a chat page of its own, and the API the widget speaks.

    GET  /widget.js        the widget (package data; plain JavaScript, no build step)
    GET  /                 a chat page holding only the widget (the demo; a chat on its own domain)
    POST /api/session      who the visitor is: {"identity": TOKEN} from a site that vouches, or
                           {} (the signed session cookie's visitor, else a new anonymous one)
    POST /api/messages     one message: multipart (id, text, file...) or JSON {id, text};
                           202 {"id": ...} once it is durable
    GET  /api/events       the conversation as Server-Sent Events (`stream`)
    GET  /api/files/SHA256 a file of the visitor's own conversation (theirs, or an agent's),
                           as a download; a picture also shown in the panel

Every API answer holds against an untrusted page (`guard`): the origin allow list, CORS for that
origin only, a CSP that runs nothing, a rate per address and per visitor, size limits; a refusal
is JSON `{"error": "..."}` saying what was wrong and what to do.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import structlog
from aiohttp import BodyPartReader, web
from markupsafe import escape

from threadline.channels.files import FileIntake, IncomingFile
from threadline.channels.web.guard import (
    API_CSP,
    PAGE_CSP,
    SECURITY_HEADERS,
    OriginPolicy,
    RateLimits,
    client_address,
    served_over_https,
)
from threadline.channels.web.replies import ReplyBoard
from threadline.channels.web.stream import ConversationStream
from threadline.channels.web.visitors import (
    SESSION_COOKIE,
    Visitor,
    new_anonymous,
    session_cookie,
    visitor_of_cookie,
    vouched_visitor,
)
from threadline.errors import ChannelAuthError, ChannelError, FileTooLargeError, StoreError
from threadline.history.files import files_of
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.interceptors.rate_limit import Rate

if TYPE_CHECKING:
    from threadline.channels.web.settings import WebSettings

log = structlog.get_logger("threadline.channels.web")

MESSAGE_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
_FORM_OVERHEAD = 64 * 1024  # the form's own fields and boundaries, beyond the files' bytes
_CHUNK = 64 * 1024
_DAY = 86_400.0
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _static(name: str) -> bytes:
    return resources.files("threadline.channels.web").joinpath("static", name).read_bytes()


class WidgetHost(Protocol):
    """What the routes need of the web channel they serve (`channel.WebChannel`)."""

    name: str
    settings: WebSettings
    board: ReplyBoard
    history: ConversationStore | None
    file_intake: FileIntake | None

    async def accept(self, visitor: Visitor, *, message_id: str, text: str,
                     files: Sequence[IncomingFile]) -> StoredMessage: ...


def refused(status: int, error: str, **headers: str) -> web.Response:
    return web.json_response({"error": error}, status=status, headers=headers)


class WidgetRoutes:
    """The routes of one web channel (see the module docstring)."""

    def __init__(self, channel: WidgetHost) -> None:
        settings = channel.settings
        self.channel = channel
        self.settings = settings
        self.origins = OriginPolicy(settings.origins)
        self.per_address = RateLimits(Rate(settings.requests_per_minute, 60.0))
        self.per_visitor = RateLimits(Rate(settings.messages_per_minute, 60.0))
        self.lifetime = settings.session_days * _DAY
        self._log = log.bind(channel=channel.name)

    # -- guards around every API route ----------------------------------------------------

    @web.middleware
    async def guarded(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        api = request.path.startswith("/api/")
        cors = self.origins.cors_headers(request) if api else {}
        if api:
            problem = self.origins.refusal(request)
            if problem is not None:
                self._log.info("web.origin_refused", origin=request.headers.get("Origin"))
                return self._finish(refused(403, problem), cors, api)
            address = client_address(request, trust_proxy=self.settings.trust_proxy)
            wait = self.per_address.retry_after(address)
            if wait is not None:
                return self._finish(refused(
                    429, f"too many requests from your address; try again in {wait} s",
                    **{"Retry-After": str(wait)}), cors, api)
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = refused(exc.status, exc.text or exc.reason)
        return self._finish(response, cors, api)

    @staticmethod
    def _finish(response: web.StreamResponse, cors: dict[str, str], api: bool
                ) -> web.StreamResponse:
        if not response.prepared:  # a stream set its headers when it began
            response.headers.update({**SECURITY_HEADERS, **cors})
            if api:  # a route's own (stricter) policy stands
                response.headers.setdefault("Content-Security-Policy", API_CSP)
        return response

    def _visitor(self, request: web.Request) -> Visitor | None:
        return visitor_of_cookie(request.cookies.get(SESSION_COOKIE),
                                 self.settings.session_secret)

    # -- routes -----------------------------------------------------------------------------

    async def widget(self, request: web.Request) -> web.Response:
        return web.Response(body=_static("widget.js"), content_type="text/javascript",
                            charset="utf-8", headers={"Cache-Control": "no-cache"})

    async def page(self, request: web.Request) -> web.Response:
        html = _static("chat.html").decode().replace("{{title}}", escape(self.settings.title))
        return web.Response(text=html, content_type="text/html", headers={
            "Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-cache"})

    async def preflight(self, request: web.Request) -> web.Response:
        """A browser asking whether its page may call the API (CORS): the guard has said."""
        return web.Response(status=204)

    async def session(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        token = body.get("identity")
        if token:
            origin = request.headers.get("Origin") or self.origins.own_origin(request)
            try:
                visitor = vouched_visitor(str(token), secret=self.settings.identity_secret,
                                          origin=origin, lifetime=self.lifetime)
            except ChannelAuthError as exc:
                self._log.info("web.identity_refused", origin=origin, reason=str(exc))
                return refused(401, f"{exc}; the chat was not opened as this customer")
        else:
            known = self._visitor(request)
            visitor = known if known is not None and not known.signed else new_anonymous(
                lifetime=self.lifetime)
        response = web.json_response({"visitor": visitor.visitor_id, "name": visitor.name,
                                      "signed": visitor.signed, "title": self.settings.title})
        response.set_cookie(
            SESSION_COOKIE, session_cookie(visitor, self.settings.session_secret),
            max_age=max(0, int(visitor.expires - time.time())), path="/", httponly=True,
            samesite="Strict",
            secure=served_over_https(request, trust_proxy=self.settings.trust_proxy))
        return response

    async def message(self, request: web.Request) -> web.Response:
        visitor = self._visitor(request)
        if visitor is None:
            return refused(401, "no chat session (or it expired): open the chat again, which "
                                "starts one (POST /api/session)")
        try:
            message_id, text, files = await self._read_message(request)
        except ValueError as exc:
            return refused(400, str(exc))
        except FileTooLargeError as exc:
            return refused(413, str(exc))
        wait = self.per_visitor.retry_after(visitor.visitor_id)
        if wait is not None:
            return refused(429, f"you are sending messages faster than they can be answered; "
                                f"wait {wait} s and send it again", **{"Retry-After": str(wait)})
        try:
            turn = await self.channel.accept(visitor, message_id=message_id, text=text,
                                             files=files)
        except (StoreError, ChannelError) as exc:
            self._log.warning("web.message_not_recorded", conversation_id=visitor.conversation_id,
                              error=str(exc))
            return refused(503, "the message could not be recorded just now; it is sent again "
                                "in a moment (nothing was lost)", **{"Retry-After": "1"})
        return web.json_response({"id": turn.id}, status=202)

    async def events(self, request: web.Request) -> web.StreamResponse:
        visitor = self._visitor(request)
        history = self.channel.history
        if visitor is None or history is None:
            return refused(401, "no chat session (or it expired): open the chat again")
        stream = ConversationStream(visitor=visitor, history=history, board=self.channel.board,
                                    history_turns=self.settings.history_turns)
        headers = {**SECURITY_HEADERS, **self.origins.cors_headers(request),
                   "Content-Security-Policy": API_CSP}
        return await stream.serve(request, headers)

    async def file(self, request: web.Request) -> web.Response:
        """A kept file, only to a visitor whose conversation holds it; never rendered as a
        page of ours (a download, sandboxed), so an uploaded HTML or SVG file runs nothing."""
        visitor = self._visitor(request)
        history, intake = self.channel.history, self.channel.file_intake
        if visitor is None or history is None or intake is None:
            return refused(404, "no such file in your conversation")
        sha256 = request.match_info["sha256"]
        held = [f for turn in await history.get(visitor.conversation_id)
                for f in files_of(turn.metadata.extra) if f.kept and f.sha256 == sha256]
        data = await intake.store.get(sha256) if held else None
        if data is None:
            return refused(404, "no such file in your conversation")
        file = held[0]
        shown = file.kind == "image"  # PNG, JPEG, GIF, WebP: never SVG
        disposition = "inline" if shown else "attachment"
        return web.Response(body=data, content_type=file.media_type if shown else (
            "application/octet-stream"), headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(file.name)}",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, max-age=3600"})

    # -- reading a message ------------------------------------------------------------------

    async def _read_message(self, request: web.Request
                            ) -> tuple[str, str, list[IncomingFile]]:
        """(the browser's message id, the text, the files) of one message; ValueError and
        FileTooLargeError say what is wrong with it."""
        files: list[IncomingFile] = []
        if request.content_type == "multipart/form-data":
            fields: dict[str, str] = {}
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    raise ValueError("a message is one form: id, text and files")
                if part.filename is None:
                    fields[part.name or ""] = (await part.read(decode=True)).decode(
                        "utf-8", "replace")[: self.settings.max_text_chars + 1]
                    continue
                if len(files) >= self.settings.max_files:
                    raise ValueError(f"a message may bring {self.settings.max_files} files at "
                                     "most; send the others in another message")
                files.append(await self._file(part))
        elif request.content_type == "application/x-www-form-urlencoded":
            fields = {k: str(v) for k, v in (await request.post()).items()}
        else:
            fields = {k: str(v) for k, v in (await _json_body(request)).items()}
        message_id, text = fields.get("id", ""), fields.get("text", "").strip()
        if not MESSAGE_ID.fullmatch(message_id):
            raise ValueError("the message has no usable id: 8 to 64 letters, digits, - or _ "
                             "(the widget makes one per message)")
        if len(text) > self.settings.max_text_chars:
            raise ValueError(f"the message is longer than {self.settings.max_text_chars} "
                             "characters; shorten it or send it in parts")
        if not text and not files:
            raise ValueError("the message is empty: write something or attach a file")
        return message_id, text, files

    async def _file(self, part: BodyPartReader) -> IncomingFile:
        """One uploaded file, read up to one byte past the intake's limit (the intake then
        notes it as too large, like every platform's)."""
        intake = self.channel.file_intake
        limit = intake.max_file_bytes if intake is not None else 0
        data = bytearray()
        while chunk := await part.read_chunk(_CHUNK):
            if len(data) <= limit:
                data += chunk
        size = len(data)
        kept = bytes(data)

        async def fetch(most: int) -> bytes:
            if size > most:
                raise FileTooLargeError(f"{part.filename!r} is over {most} bytes")
            return kept

        return IncomingFile(name=part.filename or "file", platform_id=part.filename or "file",
                            declared_size=size, fetch=fetch)


async def _json_body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = json.loads(await request.text())
    except ValueError as exc:
        raise web.HTTPBadRequest(text="the body is not JSON") from exc
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body is not a JSON object")
    return body


def widget_app(channel: WidgetHost) -> web.Application:
    """The aiohttp application serving `channel`'s widget and API."""
    routes = WidgetRoutes(channel)
    intake = channel.file_intake
    per_file = intake.max_file_bytes if intake is not None else 0
    app = web.Application(middlewares=[routes.guarded], client_max_size=(
        channel.settings.max_files * (per_file + 1) + _FORM_OVERHEAD))
    app.router.add_get("/widget.js", routes.widget)
    app.router.add_get("/", routes.page)
    app.router.add_route("OPTIONS", "/api/{path:.*}", routes.preflight)
    app.router.add_post("/api/session", routes.session)
    app.router.add_post("/api/messages", routes.message)
    app.router.add_get("/api/events", routes.events)
    app.router.add_get("/api/files/{sha256:[0-9a-f]{64}}", routes.file)
    return app
