"""A fake WhatsApp Cloud API on 127.0.0.1: the Graph API's wire format, and Meta's webhooks.

pywa's async client talks to it unchanged through the channel's `graph_url`:

    async with FakeWhatsApp() as fake:
        channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0)
        await channel.start(events)
        status = await fake.deliver(channel.webhook_url, fake.text_message(ANA, "hi"))
        [sent] = await fake.wait_for_sent(1)

- Graph API under `/vNN.N/`: `GET /PHONE_NUMBER_ID` (the number), `POST /PHONE_NUMBER_ID/
  messages` (text, interactive buttons, templates, images and documents by media id; and
  `status: read` with an optional typing indicator), `POST /PHONE_NUMBER_ID/media` (multipart
  upload), `GET /MEDIA_ID` (where a file is), and the file itself at `/files/MEDIA_ID`. Each
  call must carry `Authorization: Bearer TOKEN` (else error 190, HTTP 401) and is recorded in
  `calls`; every message sent is in `sent` with its wamid. `fail(...)` answers the next sends
  with a Graph error (`131056` pair rate limit, HTTP 429 with `Retry-After`, ...).
- Webhooks: `text_message`, `media_message`, `button_press` and `status` build a Cloud API
  webhook body; `deliver` POSTs it signed with the app secret (`X-Hub-Signature-256`), or
  unsigned, or signed with another secret; `verify` plays Meta's `hub.challenge` GET.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
from aiohttp import web

PHONE_NUMBER_ID = "106540352242922"
DISPLAY_NUMBER = "+1 555-000-1111"
WAIT_SECONDS = 15.0  # waits fail after this rather than hang a test (a loaded machine)


@dataclass(frozen=True, slots=True)
class Customer:
    """A WhatsApp user as webhooks name them."""

    wa_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One Graph API call as it crossed the wire."""

    method: str
    path: str
    body: Any
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class Sent:
    """One message the business number sent."""

    wamid: str
    to: str
    type: str
    body: Mapping[str, Any]

    @property
    def text(self) -> str:
        """What the customer reads: a text's body, buttons' body, a template's parameters."""
        if self.type == "text":
            return str(self.body["text"]["body"])
        if self.type == "interactive":
            return str(self.body["interactive"]["body"]["text"])
        if self.type == "template":
            parameters = [p["text"] for c in self.body["template"].get("components", [])
                          for p in c.get("parameters", [])]
            return f"[template {self.body['template']['name']}] " + " ".join(parameters)
        return f"[{self.type}]"


@dataclass(slots=True)
class _Failure:
    code: int
    status: int
    retry_after: int | None


@dataclass(slots=True)
class FakeWhatsApp:
    token: str = "EAAG-fake-access-token"
    app_secret: str = "fake-app-secret-0123456789"
    verify_token: str = "fake-verify-token"
    phone_number_id: str = PHONE_NUMBER_ID
    calls: list[ApiCall] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)  # wamids marked read
    typing: list[str] = field(default_factory=list)  # wamids shown with typing
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    url: str = ""
    media_url_host: str | None = None  # where the media endpoint says files are (else here)
    file_requests: list[str] = field(default_factory=list)  # media ids fetched from /files
    _failures: deque[_Failure] = field(default_factory=deque)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/files/{media_id}", self._file)
        app.router.add_route("*", "/{version}/{path:.+}", self._graph)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def channel_settings(self) -> dict[str, str]:
        """The channel settings that point a WhatsApp channel here."""
        return {"phone_number_id": self.phone_number_id, "access_token": self.token,
                "app_secret": self.app_secret, "verify_token": self.verify_token,
                "graph_url": self.url}

    # -- what the test sees ------------------------------------------------------------------

    def fail(self, *, code: int = 131056, status: int = 400, retry_after: int | None = None,
             times: int = 1) -> None:
        """Answer the next `times` sends with Graph error `code` (HTTP `status`)."""
        self._failures.extend(_Failure(code, status, retry_after) for _ in range(times))

    async def wait_for_sent(self, count: int, *, within: float = WAIT_SECONDS) -> list[Sent]:
        """The first `count` messages sent, waiting for them (fails after `within` s)."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= count)
        return self.sent[:count]

    async def wait_until(self, condition: Callable[[], object], *,
                         within: float = WAIT_SECONDS) -> None:
        """Wait until `condition()` holds after a call (fails after `within` s)."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: bool(condition()))

    def add_media(self, data: bytes, mime_type: str) -> str:
        """A file a customer sent, kept where the media endpoint finds it; its media id."""
        media_id = f"media-{next(self._ids)}"
        self.media[media_id] = (data, mime_type)
        return media_id

    # -- webhooks ----------------------------------------------------------------------------

    def new_wamid(self) -> str:
        return f"wamid.FAKE{next(self._ids):08d}=="

    def webhook(self, *, messages: list[dict[str, Any]] | None = None,
                statuses: list[dict[str, Any]] | None = None,
                contacts: Sequence[Customer] = ()) -> dict[str, Any]:
        """A Cloud API webhook body with these messages and statuses, in one change."""
        value: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001111",
                         "phone_number_id": self.phone_number_id}}
        if contacts:
            value["contacts"] = [{"profile": {"name": c.name}, "wa_id": c.wa_id}
                                 for c in contacts]
        if messages:
            value["messages"] = messages
        if statuses:
            value["statuses"] = statuses
        return {"object": "whatsapp_business_account",
                "entry": [{"id": "WABA-1", "changes": [{"field": "messages", "value": value}]}]}

    def message(self, customer: Customer, kind: str, content: dict[str, Any], *,
                wamid: str | None = None, context: str | None = None,
                sent_at: float | None = None) -> dict[str, Any]:
        """One inbound message object (`type` `kind` with its `content`)."""
        message: dict[str, Any] = {"from": customer.wa_id, "id": wamid or self.new_wamid(),
                                   "timestamp": str(int(sent_at or time.time())),
                                   "type": kind, kind: content}
        if context is not None:
            message["context"] = {"from": "15550001111", "id": context}
        return message

    def text_message(self, customer: Customer, text: str, **options: Any) -> dict[str, Any]:
        """A webhook body carrying one text message from `customer`."""
        return self.webhook(messages=[self.message(customer, "text", {"body": text},
                                                   **options)], contacts=[customer])

    def media_message(self, customer: Customer, kind: str, media_id: str, *,
                      caption: str | None = None, filename: str | None = None,
                      voice: bool = False) -> dict[str, Any]:
        """A webhook body with one image, document or audio message."""
        data, mime_type = self.media[media_id]
        content: dict[str, Any] = {"id": media_id, "mime_type": mime_type,
                                   "sha256": hashlib.sha256(data).hexdigest()}
        if caption is not None:
            content["caption"] = caption
        if filename is not None:
            content["filename"] = filename
        if voice:
            content["voice"] = True
        return self.webhook(messages=[self.message(customer, kind, content)],
                            contacts=[customer])

    def button_press(self, customer: Customer, pressed: Sent, index: int = 0
                     ) -> dict[str, Any]:
        """A webhook body: `customer` pressed button `index` of the interactive message."""
        button = pressed.body["interactive"]["action"]["buttons"][index]["reply"]
        return self.webhook(messages=[self.message(
            customer, "interactive", {"type": "button_reply", "button_reply": button},
            context=pressed.wamid)], contacts=[customer])

    def status(self, sent: Sent, status: str, *, errors: Sequence[dict[str, Any]] = ()
               ) -> dict[str, Any]:
        """A webhook body with one status callback about a message the number sent."""
        entry: dict[str, Any] = {"id": sent.wamid, "status": status, "recipient_id": sent.to,
                                 "timestamp": str(int(time.time()))}
        if errors:
            entry["errors"] = list(errors)
        return self.webhook(statuses=[entry])

    async def deliver(self, url: str, body: Mapping[str, Any], *,
                      signed: Literal["yes", "no", "wrong"] = "yes") -> tuple[int, str]:
        """POST a webhook body as Meta does; (status, text) of the answer."""
        raw = json.dumps(body).encode()
        secret = self.app_secret if signed == "yes" else "someone-else's-secret"
        headers = {"Content-Type": "application/json"}
        if signed != "no":
            digest = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature-256"] = f"sha256={digest}"
        assert self._session is not None
        async with self._session.post(url, data=raw, headers=headers) as response:
            return response.status, await response.text()

    async def verify(self, url: str, *, verify_token: str, challenge: str) -> tuple[int, str]:
        """Meta's check of a callback URL; (status, text) of the answer."""
        assert self._session is not None
        async with self._session.get(url, params={
                "hub.mode": "subscribe", "hub.verify_token": verify_token,
                "hub.challenge": challenge}) as response:
            return response.status, await response.text()

    # -- the Graph API -----------------------------------------------------------------------

    @staticmethod
    def _error(status: int, code: int, message: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": "OAuthException",
                                            "code": code, "fbtrace_id": "FAKE"}},
                                 status=status)

    async def _record(self, call: ApiCall) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _graph(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return self._error(401, 190, "Invalid OAuth access token.")
        path = request.match_info["path"]
        if request.content_type.startswith("multipart/"):
            form = await request.post()
            body: Any = {k: v for k, v in form.items() if not hasattr(v, "file")}
            upload = form.get("file")
            if upload is not None and hasattr(upload, "file"):
                body["file"] = (upload.file.read(), upload.content_type)
        else:
            body = await request.json() if request.can_read_body else dict(request.query)
        await self._record(ApiCall(request.method, path, body, time.monotonic()))
        if path == self.phone_number_id and request.method == "GET":
            return web.json_response({"id": self.phone_number_id, "verified_name": "Shop",
                                      "display_phone_number": DISPLAY_NUMBER,
                                      "status": "CONNECTED", "quality_rating": "GREEN"})
        if path == f"{self.phone_number_id}/messages" and request.method == "POST":
            return await self._messages(body)
        if path == f"{self.phone_number_id}/media" and request.method == "POST":
            data, mime_type = body["file"]
            return web.json_response({"id": self.add_media(data, mime_type)})
        if path in self.media and request.method == "GET":
            data, mime_type = self.media[path]
            return web.json_response({
                "messaging_product": "whatsapp", "id": path, "mime_type": mime_type,
                "url": f"{self.media_url_host or self.url}/files/{path}",
                "file_size": len(data),
                "sha256": hashlib.sha256(data).hexdigest()})
        return self._error(400, 100, f"Unsupported request: {request.method} /{path}")

    async def _messages(self, body: dict[str, Any]) -> web.Response:
        if body.get("status") == "read":
            async with self._changed:
                self.reads.append(body["message_id"])
                if "typing_indicator" in body:
                    self.typing.append(body["message_id"])
                self._changed.notify_all()
            return web.json_response({"success": True})
        if self._failures:
            failure = self._failures.popleft()
            response = self._error(failure.status, failure.code,
                                   f"(#{failure.code}) rate limit hit")
            if failure.retry_after is not None:
                response.headers["Retry-After"] = str(failure.retry_after)
            return response
        kind = body.get("type", "")
        if kind == "text" and len(body["text"]["body"]) > 4096:
            return self._error(400, 100, "Param text['body'] must be at most 4096 characters")
        to = body.get("to") or body.get("recipient")
        sent = Sent(wamid=self.new_wamid(), to=str(to), type=kind, body=body)
        async with self._changed:
            self.sent.append(sent)
            self._changed.notify_all()
        return web.json_response({"messaging_product": "whatsapp",
                                  "contacts": [{"input": to, "wa_id": to}],
                                  "messages": [{"id": sent.wamid}]})

    async def _file(self, request: web.Request) -> web.Response:
        self.file_requests.append(request.match_info["media_id"])
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401, text="media needs the access token")
        found = self.media.get(request.match_info["media_id"])
        if found is None:
            return web.Response(status=404)
        return web.Response(body=found[0], content_type=found[1])
