"""A fake system that talks to the `http` platform: it signs webhooks and takes replies.

    async with FakeCaller(secret) as caller:         # its callback server on 127.0.0.1
        answer = await caller.send(url, conversation_id="order-1", message_id="m1",
                                   text="where is my parcel?")
        await caller.wait_for_replies(1)

The callback checks every reply's signature the way the protocol says (docs/platforms/http.md)
with an independent implementation (it does not import ours), and counts what crossed the wire:
`posts` (every request, even repeated), `replies` (the signed ones it accepted, by reply id).
`go_down()` closes its port (connections are refused) and `come_back()` serves it again on the
same port; `status` makes it answer another status instead (a 503 while it is "busy").
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from types import TracebackType
from typing import Any, Self

import aiohttp
from aiohttp import web

from tests.ports import free_port


def sign(secret: str, timestamp: int, signed: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 of `TIMESTAMP.SIGNED`, written from the protocol's text."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + signed, hashlib.sha256)
    return "v1=" + mac.hexdigest()


class FakeCaller:
    """The caller's side of the protocol: signed requests out, a callback server in."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.port = free_port()
        self.status = 200
        self.posts: list[dict[str, Any]] = []
        self.replies: dict[str, dict[str, Any]] = {}
        self.refused_signatures = 0
        self._answered: dict[str, dict[str, Any]] = {}  # by the message they answer
        self._arrived = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def callback_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/replies"

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession()
        await self.come_back()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.go_down()
        if self._session is not None:
            await self._session.close()

    async def go_down(self) -> None:
        """Close the callback's port: posts to it are refused."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def come_back(self) -> None:
        """Serve the callback again, on the same port."""
        app = web.Application()
        app.router.add_post("/replies", self._take)
        app.router.add_route("HEAD", "/replies", self._head)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _head(self, request: web.Request) -> web.Response:
        return web.Response(status=405)

    async def _take(self, request: web.Request) -> web.Response:
        body = await request.read()
        timestamp = request.headers.get("X-Threadline-Timestamp", "")
        given = request.headers.get("X-Threadline-Signature", "")
        reply = json.loads(body)
        async with self._arrived:
            self.posts.append(reply)
            self._arrived.notify_all()
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > 300 or \
                not hmac.compare_digest(sign(self.secret, int(timestamp), body), given):
            self.refused_signatures += 1
            return web.json_response({"error": "bad_signature"}, status=401)
        if self.status != 200:
            return web.json_response({"error": "busy"}, status=self.status)
        assert request.headers["Idempotency-Key"] == reply["reply_id"]
        async with self._arrived:
            self.replies.setdefault(reply["reply_id"], reply)
            self._answered.setdefault(reply["in_reply_to"], reply)
            self._arrived.notify_all()
        return web.json_response({"ok": True})

    async def wait_for_replies(self, count: int, *, within: float = 30.0) -> list[dict[str, Any]]:
        """The first `count` replies accepted, once that many arrived."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.replies) >= count)
        return list(self.replies.values())

    async def reply_to(self, message_id: str, *, within: float = 30.0) -> dict[str, Any]:
        """The first reply accepted for the message `message_id`, once it arrived."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: message_id in self._answered)
        return self._answered[message_id]

    async def wait_for_posts(self, count: int, *, within: float = 30.0) -> None:
        """Until the callback was posted to `count` times (accepted or not)."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.posts) >= count)

    async def send(self, url: str, *, conversation_id: str, message_id: str | None, text: str,
                   speaker: str = "customer-42", to: str | list[str] | None = None,
                   timestamp: int | None = None, secret: str | None = None,
                   headers: dict[str, str] | None = None,
                   body: bytes | None = None) -> tuple[int, dict[str, Any]]:
        """Post one signed message; (status, the JSON answer). `timestamp`, `secret` and
        `body` override what is signed or sent, to forge, replay or break a request."""
        fields: dict[str, Any] = {"conversation_id": conversation_id, "text": text,
                                  "speaker": {"id": speaker, "name": speaker.title()}}
        if message_id is not None:
            fields["message_id"] = message_id
        if to is not None:
            fields["to"] = to
        raw = body if body is not None else json.dumps(fields).encode()
        when = int(time.time()) if timestamp is None else timestamp
        signed = {"X-Threadline-Timestamp": str(when),
                  "X-Threadline-Signature": sign(secret or self.secret, when, raw),
                  "Content-Type": "application/json", **(headers or {})}
        assert self._session is not None
        async with self._session.post(url, data=raw, headers=signed) as response:
            return response.status, await response.json()

    async def fetch(self, url: str, *, after: int = 0,
                    conversation_id: str | None = None) -> tuple[int, dict[str, Any]]:
        """GET the replies after a cursor, signed over the request target."""
        target = f"/http/messages/replies?after={after}"
        if conversation_id is not None:
            target += f"&conversation_id={conversation_id}"
        when = int(time.time())
        assert self._session is not None
        async with self._session.get(
                url.split("/http/messages")[0] + target,
                headers={"X-Threadline-Timestamp": str(when),
                         "X-Threadline-Signature": sign(self.secret, when, target.encode())},
        ) as response:
            return response.status, await response.json()
