"""The Teams SDK's `App` as the channel runs it: behind our own aiohttp endpoint, with the two
places where the SDK's defaults do not hold for us put right.

`open_app` builds the App on a `TeamsEndpoint` (the SDK's `HttpServerAdapter` protocol on an
aiohttp application the channel serves through `threadline.listening.serve`, so a port in use
is one line and `threadline check` tries it first), registers the channel's handlers, and:

- runs the SDK's inbound token validation in a worker thread (`teams.auth.OffLoopValidator`:
  its key-set fetch is blocking), and refuses a key not endorsed for Teams, which it does not;
- answers an authenticated activity the SDK's models refuse with 200 and hands it to
  `on_unreadable` (the channel's `skip_event`): the SDK would answer 500, and Teams would
  deliver the same unreadable activity again and again.

Everything the SDK answers before our handlers run (401 for a missing or invalid token) is kept.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import pydantic
from aiohttp import web
from microsoft_teams.api import InvokeResponse, TokenCredentials
from microsoft_teams.api.auth.cloud_environment import CloudEnvironment

from threadline.channels.teams.auth import BotTokens, OffLoopValidator, keys_url
from threadline.errors import ChannelError, ConfigError

with warnings.catch_warnings():  # its preview HTML widget policy warns on import; unused here
    warnings.simplefilter("ignore")
    from microsoft_teams.apps import App
    from microsoft_teams.apps.http.adapter import HttpMethod, HttpRequest, HttpRouteHandler


class TeamsEndpoint:
    """The SDK's `HttpServerAdapter` on aiohttp: the messaging endpoint Teams posts to.

    While `is_closing()` holds, activities are answered 503 (Teams may deliver them again); a
    body that is not a JSON object is answered 400.
    """

    def __init__(self, *, is_closing: Callable[[], bool]) -> None:
        self.app = web.Application()
        self._is_closing = is_closing

    def register_route(self, method: HttpMethod, path: str, handler: HttpRouteHandler) -> None:
        async def receive(request: web.Request) -> web.StreamResponse:
            if self._is_closing():
                return web.json_response({"error": "stopping; deliver again later"}, status=503)
            try:
                body = json.loads(await request.read())
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return web.json_response({"error": "the body is not a JSON activity"},
                                         status=400)
            answer = await handler(HttpRequest(body=body, headers=dict(request.headers)))
            if answer["body"] is None:
                return web.Response(status=answer["status"])
            return web.json_response(answer["body"], status=answer["status"])

        self.app.router.add_route(method, path, receive)

    def serve_static(self, path: str, directory: str) -> None:
        """Nothing is served but the messaging endpoint."""

    async def start(self, port: int) -> None:
        raise NotImplementedError("the channel serves the endpoint itself (listening.serve)")

    async def stop(self) -> None:
        """The channel stops its own runner."""


async def open_app(*, channel: str, app_id: str, tenant_id: str, tokens: BotTokens,
                   cloud: CloudEnvironment, service_url: str, path: str,
                   is_closing: Callable[[], bool], register: Callable[[App], None],
                   on_unreadable: Callable[[object, BaseException], None]
                   ) -> tuple[App, web.Application]:
    """The initialized App with the channel's handlers (`register`), and the aiohttp
    application to serve (see the module docstring)."""
    endpoint = TeamsEndpoint(is_closing=is_closing)
    app = App(client_id=app_id, tenant_id=tenant_id, token=tokens, cloud=cloud,
              service_url=service_url, http_server_adapter=endpoint, messaging_endpoint=path,
              state=False, telemetry={"agent365": False})
    if not isinstance(app.credentials, TokenCredentials):
        raise ConfigError(
            f"Teams channel {channel!r}: the Teams SDK took its credentials from the "
            "CLIENT_SECRET environment variable instead of this channel's app_password; unset "
            "CLIENT_SECRET (the SDK also reads a .env file in the working directory)")
    register(app)
    await app.initialize()
    validator = app.server._token_validator  # built by initialize(), from app_id
    if validator is None:
        raise ChannelError(f"Teams channel {channel!r}: the Teams SDK set up no token "
                           "validation, so every activity would be refused")
    app.server._token_validator = OffLoopValidator(  # type: ignore[assignment]
        validator, keys_url=keys_url(cloud), issuer=cloud.token_issuer)
    process = app.server.on_request

    async def process_readable(event: Any) -> Any:
        try:
            return await process(event) if process is not None else InvokeResponse(status=500)
        except pydantic.ValidationError as error:
            on_unreadable(getattr(event.body, "id", None), error)
            return InvokeResponse(status=200)

    app.server.on_request = process_readable
    return app, endpoint.app


def card_answer(status: int, message: str) -> InvokeResponse[Any]:
    """The answer to an `adaptiveCard/action` invoke: a message shown on the card."""
    return InvokeResponse(status=200, body={
        "statusCode": status, "type": "application/vnd.microsoft.activity.message",
        "value": message})
