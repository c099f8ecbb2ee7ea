"""The WhatsApp webhook endpoint: Meta's verification, the signature on every event, and the
200 only once each message of the POST is recorded.

Meta delivers a webhook once it is answered 200 and never again, so the answer waits for the
turns: each message of the POST is taken (`take`: for a message, recorded by `on_message`)
before the 200. When one could not be recorded the answer is 503 and Meta delivers the whole
POST again later; the copies of the messages already recorded are dropped by turn id. pywa's
own server is not used for this reason: it answers 200 before its handlers run.

- `GET` with `hub.mode=subscribe` and the right `hub.verify_token` is answered with
  `hub.challenge` (how Meta checks the callback URL); anything else is 403, in words.
- `POST` must carry `X-Hub-Signature-256: sha256=HMAC` of the exact body with the app secret;
  a missing or wrong signature is 401 and nothing of it is read. A body that is not JSON is
  400. A message that cannot be read is skipped (logged and counted) and the others are taken.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from threadline.channels.whatsapp.inbound import (
    DeliveryStatus,
    InboundMessage,
    UnreadableEvent,
    events_in,
)
from threadline.errors import TurnNotRecordedError
from threadline.listening import Listener, serve

EventTaker = Callable[[InboundMessage | DeliveryStatus], Coroutine[Any, Any, None]]
SkipHandler = Callable[[object, BaseException], None]
SIGNATURE_HEADER = "X-Hub-Signature-256"


def signature_of(body: bytes, app_secret: str) -> str:
    """The `X-Hub-Signature-256` value Meta sends with `body`."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookReceiver:
    """Serves the webhook (see the module docstring)."""

    def __init__(self, *, take: EventTaker, skip: SkipHandler, app_secret: str,
                 verify_token: str, log: Any) -> None:
        self._take = take
        self._skip = skip
        self._app_secret = app_secret
        self._verify_token = verify_token.encode()
        self._log = log
        self._runner: web.AppRunner | None = None
        self.url: str | None = None  # where it listens, once started

    async def start(self, *, listener: Listener, path: str) -> None:
        """Serve `listener`'s host:port at `path` (the callback URL proxies to it)."""
        path = path if path.startswith("/") else f"/{path}"
        server = web.Application()
        server.router.add_get(path, self._verify)
        server.router.add_post(path, self._receive)
        self._runner = web.AppRunner(server, access_log=None)
        await self._runner.setup()
        try:
            await serve(self._runner, listener)
        except BaseException:
            await self.stop()
            raise
        host, bound = self._runner.addresses[0][:2]  # the port bound, for port 0
        self.url = f"http://{host}:{bound}{path}"
        self._log.info("whatsapp.webhook_listening", listen=self.url)

    async def stop(self) -> None:
        """Stop listening once the requests in progress are answered."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _verify(self, request: web.Request) -> web.Response:
        query = request.query
        token = query.get("hub.verify_token", "").encode()
        if query.get("hub.mode") != "subscribe" or not hmac.compare_digest(
                token, self._verify_token):
            self._log.warning("whatsapp.verification_refused", status=403,
                              reason="hub.mode is not subscribe or hub.verify_token differs")
            return web.Response(status=403, text=(
                "verification refused: hub.verify_token does not match this channel's "
                "verify_token (set the same value in the Meta app's webhook settings)"))
        self._log.info("whatsapp.webhook_verified")
        return web.Response(text=query.get("hub.challenge", ""))

    async def _receive(self, request: web.Request) -> web.Response:
        body = await request.read()
        signature = request.headers.get(SIGNATURE_HEADER)
        if signature is None or not hmac.compare_digest(
                signature.encode(), signature_of(body, self._app_secret).encode()):
            reason = ("no X-Hub-Signature-256 header" if signature is None else
                      "X-Hub-Signature-256 does not match the body signed with the app secret")
            self._log.warning("whatsapp.webhook_refused", status=401, reason=reason)
            return web.Response(status=401, text=f"refused: {reason}; nothing was read")
        try:
            payload = json.loads(body)
            events = list(events_in(payload))
        except (ValueError, UnreadableEvent) as error:
            self._log.warning("whatsapp.webhook_refused", status=400, reason=str(error))
            return web.Response(status=400, text=f"not a WhatsApp webhook: {error}")
        for event in events:
            if isinstance(event, UnreadableEvent):
                self._skip("webhook part", event)
                continue
            try:
                await self._take(event)
            except TurnNotRecordedError as error:
                self._log.warning("whatsapp.event_not_recorded", error=str(error),
                                  outcome="answered 503; Meta delivers the POST again")
                return web.Response(status=503, text="not recorded; deliver again later")
            except Exception as error:  # one bad message never stops the others
                event_id = event.wamid if isinstance(event, InboundMessage) else event.message_id
                self._skip(event_id, error)
        return web.Response(text="ok")
