"""A fake Slack on 127.0.0.1 for tests and benchmarks: Web API, signed events and Socket Mode.

It speaks the wire protocol the real SDKs speak, so a channel under test uses slack_sdk and
slack-bolt unchanged, pointed here through `api_base_url`:

    async with FakeSlack() as fake:
        channel = SlackChannel(bot_token=fake.bot_token, signing_secret=fake.signing_secret,
                               api_base_url=fake.url, port=0)
        await channel.start(events)
        await fake.deliver_event(channel.events_url, fake.message_event("hi <@U0BOT>"))
        [post] = await fake.wait_for_calls("chat.postMessage", 1)

- Web API at `/api/<method>` (JSON, form or query parameters, as slack_sdk sends them):
  `auth.test`, `chat.postMessage`, `chat.update`, `chat.startStream` / `chat.appendStream` /
  `chat.stopStream` (streams only in threads, as Slack), `assistant.threads.setStatus`,
  `users.info`, `conversations.info`, `apps.connections.open`, and `conversations.history` /
  `conversations.replies` over what people said before the bot heard it (`said_earlier`).
  Every call is recorded in
  `calls` with the time it arrived; `messages` holds what each of the bot's messages shows
  now and `statuses` each thread's assistant status. `fail(...)` makes the next calls of a
  method answer 429 with Retry-After or a Slack error code; `hold(...)` keeps a method's
  answers waiting.
- Events API: `deliver_event` POSTs an `event_callback` to the app signed with the signing
  secret (or a wrong one), optionally with `X-Slack-Retry-Num`; `verify_url` sends the
  `url_verification` challenge.
- Socket Mode: `apps.connections.open` hands out a `ws://` URL; the fake says `hello` and
  `send_socket_event` pushes an `events_api` envelope and waits for the client's ack
  (`push_socket_event` does not wait, for events that must not be acked).
- Assistant threads: `assistant_thread_event` builds `assistant_thread_started` /
  `assistant_thread_context_changed`; `assistant.threads.setSuggestedPrompts` is checked (at
  most 4 prompts, each with a title and a message) and recorded like every call.
- OAuth (an app installed in many workspaces): `add_team` adds a workspace with its own bot;
  `/oauth/v2/authorize` plays the person pressing Allow (in the workspace the URL's `team`
  names) and redirects to the app with a code; `oauth.v2.access` exchanges the code (client id
  and secret checked) for that workspace's bot token, with `refresh_token` and `expires_in`
  when `token_lifetime` is set (token rotation), and refreshes with `grant_type=refresh_token`.
  Each issued token answers `auth.test` as its workspace's bot; `revoke(team)` makes them
  `token_revoked` and returns the `tokens_revoked` event. `install(...)` walks the whole flow
  over HTTP, as a browser would. `deliver_event(..., team_id=...)` sends an event from a team.
- Slash commands: `slash_command(...)` builds the payload, `deliver_command` POSTs it form-
  encoded and signed (HTTP mode), `send_socket_command` pushes a `slash_commands` envelope; the
  payload's `response_url` points here, and what the app posts to it is kept in `responses`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import pytest
from aiohttp import ClientSession, WSMsgType, web

from tests.channels.recording import RecordingEvents
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.history import ConversationStore

DEFAULT_SCOPES = ("chat:write", "channels:history", "groups:history", "im:history",
                  "mpim:history", "users:read", "channels:read")
MAX_TEXT_CHARS = 40_000
# Waits fail after this rather than hang a test (a loaded machine stalls for seconds).
WAIT_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One Web API call as it crossed the wire."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the app answered to one event delivery."""

    event_id: str
    status: int
    body: str


@dataclass(slots=True)
class FakeTeam:
    """A workspace the app may be installed in, with the bot user it gets there."""

    team_id: str
    name: str
    bot_user_id: str
    bot_id: str
    installer: str = "U0INSTALLER"


@dataclass(slots=True)
class IssuedToken:
    """A token `oauth.v2.access` handed out: whose it is, until when, and its refresh token."""

    team_id: str
    refresh_token: str | None
    expires_at: float | None
    revoked: bool = False


@dataclass(slots=True)
class _Failure:
    error: str
    status: int
    retry_after: int | None
    remaining: int


@dataclass(slots=True)
class _Socket:
    ws: web.WebSocketResponse
    acks: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)


class FakeSlack:
    """A Slack workspace with one bot, served on 127.0.0.1 (port 0: `url` says where)."""

    def __init__(
        self,
        *,
        signing_secret: str = "fake-signing-secret",
        bot_token: str = "xoxb-fake-bot-token",
        app_token: str = "xapp-fake-app-token",
        team_id: str = "T0FAKE",
        bot_user_id: str = "U0BOT",
        bot_id: str = "B0BOT",
        bot_name: str = "threadline",
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
    ) -> None:
        self.signing_secret = signing_secret
        self.bot_token = bot_token
        self.files: dict[str, bytes] = {}  # file id -> bytes served at url_private
        self.file_downloads: list[str] = []
        self.redirects: list[str] = []  # targets of `redirecting_to` URLs
        self.pending_uploads: dict[str, dict[str, Any]] = {}
        self.uploaded: list[dict[str, Any]] = []  # files the bot shared (files upload v2)
        self.app_token = app_token
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.scopes = scopes
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.calls: list[ApiCall] = []
        self.messages: dict[str, str] = {}  # the bot's messages by ts: what each shows now
        # What people said before the bot heard it, by channel (`said_earlier`): served by
        # conversations.history and conversations.replies.
        self.earlier: dict[str, list[dict[str, Any]]] = {}
        self.streaming: set[str] = set()  # chat streams started and not stopped
        self.statuses: dict[tuple[str, str], str] = {}  # (channel, thread_ts) -> status
        self.socket_acks: list[dict[str, Any]] = []
        self.responses: list[tuple[str, dict[str, Any]]] = []  # (response_url, body) posted
        self._failures: dict[str, list[_Failure]] = {}
        self._holds: dict[str, asyncio.Event] = {}
        self._changed = asyncio.Condition()
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._sockets: list[_Socket] = []
        self.client_id = "1111.2222"
        self.client_secret = "fake-client-secret"
        self.teams: dict[str, FakeTeam] = {}
        self.tokens: dict[str, IssuedToken] = {}  # every token oauth.v2.access issued
        self.token_lifetime: int | None = None  # seconds: issue rotating tokens
        self.redirect_url: str | None = None  # the app's configured Redirect URL
        self._codes: dict[str, tuple[str, str | None]] = {}  # code -> (team, redirect_uri)
        self._refresh_tokens: dict[str, str] = {}  # live refresh token -> team
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None
        self._port = 0
        self.add_user(bot_user_id, display_name=bot_name, is_bot=True)

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/files-pri/{file_id}/{name}", self._file)
        app.router.add_get("/files-redirect/{number}", self._file_redirect)
        app.router.add_post("/upload/v1/{file_id}", self._receive_upload)
        app.router.add_get("/socket", self._socket_endpoint)
        app.router.add_post("/commands/{trigger}", self._command_response)
        app.router.add_get("/oauth/v2/authorize", self._authorize)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self._port = self._runner.addresses[0][1]
        self._session = ClientSession()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for socket in self._sockets:
            await socket.ws.close()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        """The Web API base URL to give slack_sdk (`api_base_url`)."""
        return f"http://127.0.0.1:{self._port}/api/"

    def channel_settings(self, *, mode: str = "http") -> dict[str, Any]:
        """Settings for a `SlackChannel` (or a `threadline run` config) pointed at this fake;
        its files, served on loopback, are named in `file_hosts`."""
        settings: dict[str, Any] = {"bot_token": self.bot_token, "api_base_url": self.url,
                                    "mode": mode, "file_hosts": [f"127.0.0.1:{self._port}"]}
        if mode == "http":
            settings.update(signing_secret=self.signing_secret, host="127.0.0.1", port=0)
        else:
            settings.update(app_token=self.app_token)
        return settings

    @property
    def authorize_url(self) -> str:
        """Slack's authorize page, here (`oauth.authorize_url`)."""
        return f"http://127.0.0.1:{self._port}/oauth/v2/authorize"

    # -- OAuth: an app installed in many workspaces -----------------------------------------

    def add_team(self, team_id: str, *, name: str, bot_user_id: str, bot_id: str) -> FakeTeam:
        self.teams[team_id] = team = FakeTeam(team_id, name, bot_user_id, bot_id)
        self.add_user(bot_user_id, display_name=f"threadline-{team_id.lower()}", is_bot=True)
        return team

    def tokens_of(self, team_id: str) -> list[str]:
        """The tokens issued for a workspace, oldest first."""
        return [t for t, issued in self.tokens.items() if issued.team_id == team_id]

    def revoke(self, team_id: str) -> dict[str, Any]:
        """Revoke every token of the workspace; the `tokens_revoked` event Slack then sends."""
        for token in self.tokens_of(team_id):
            self.tokens[token].revoked = True
        team = self.teams[team_id]
        return {"type": "tokens_revoked", "event_ts": self.next_ts(),
                "tokens": {"oauth": [], "bot": [team.bot_user_id]}}

    async def install(self, install_url: str, *, team_id: str) -> tuple[int, str]:
        """A person installs the app in `team_id`: the install URL (a redirect to the authorize
        page, with the state cookie), Allow, and the redirect back with the code, each over
        HTTP. Returns what the app answered the redirect with (status, body)."""
        assert self._session is not None, "use FakeSlack as `async with`"
        separator = "&" if "?" in install_url else "?"
        async with self._session.get(f"{install_url}{separator}team={team_id}",
                                     allow_redirects=False) as started:
            assert started.status == 302, (started.status, await started.text())
            authorize = started.headers["Location"]
            cookie = started.headers.get("Set-Cookie", "").split(";")[0]
        async with self._session.get(authorize, allow_redirects=False) as allowed:
            assert allowed.status == 302, (allowed.status, await allowed.text())
            redirect = allowed.headers["Location"]
        # The browser sends the cookie back (aiohttp's jar keeps Secure cookies to https).
        async with self._session.get(redirect, headers={"Cookie": cookie},
                                     allow_redirects=False) as finished:
            return finished.status, await finished.text()

    async def _authorize(self, request: web.Request) -> web.Response:
        """Slack's authorize page with Allow pressed: back to the app with a code."""
        query = request.query
        team_id = query.get("team") or next(iter(self.teams), "")
        if query.get("client_id") != self.client_id or team_id not in self.teams:
            return web.Response(status=400, text="invalid_client_id or unknown team")
        redirect_uri = query.get("redirect_uri") or self.redirect_url
        if not redirect_uri:
            return web.Response(status=400, text="no redirect_uri and none configured")
        code = f"code-{next(self._ids)}"
        self._codes[code] = (team_id, query.get("redirect_uri"))
        back = urllib.parse.urlencode({"code": code, "state": query.get("state", "")})
        return web.Response(status=302, headers={"Location": f"{redirect_uri}?{back}"})

    def _oauth_access(self, params: dict[str, Any], basic: tuple[str, str] | None
                      ) -> dict[str, Any]:
        client_id, secret = basic or (params.get("client_id"), params.get("client_secret"))
        if client_id != self.client_id or secret != self.client_secret:
            return {"ok": False, "error": "invalid_client_id"}
        if params.get("grant_type") == "refresh_token":
            team_id = self._refresh_tokens.pop(str(params.get("refresh_token")), "")
            if not team_id:
                return {"ok": False, "error": "invalid_refresh_token"}
        else:
            team_id, redirect_uri = self._codes.pop(str(params.get("code")), ("", None))
            if not team_id:
                return {"ok": False, "error": "invalid_code"}
            if redirect_uri is not None and params.get("redirect_uri") != redirect_uri:
                return {"ok": False, "error": "bad_redirect_uri"}
        team = self.teams[team_id]
        rotating = self.token_lifetime is not None
        token = f"{'xoxe.' if rotating else ''}xoxb-{team_id}-{next(self._ids)}"
        refresh = f"xoxe-1-{team_id}-{next(self._ids)}" if rotating else None
        self.tokens[token] = IssuedToken(
            team_id, refresh, time.time() + self.token_lifetime if self.token_lifetime else None)
        answer: dict[str, Any] = {
            "ok": True, "app_id": "A0FAKE", "token_type": "bot", "access_token": token,
            "scope": ",".join(self.scopes), "bot_user_id": team.bot_user_id,
            "team": {"id": team_id, "name": team.name}, "enterprise": None,
            "is_enterprise_install": False,
            "authed_user": {"id": team.installer}}
        if refresh is not None:
            self._refresh_tokens[refresh] = team_id
            answer.update(refresh_token=refresh, expires_in=self.token_lifetime)
        return answer

    def _token_problem(self, method: str, token: str | None) -> str | None:
        """Why a call with `token` is refused (None: it is accepted)."""
        if method == "apps.connections.open":
            return None if token == self.app_token else "invalid_auth"
        if token == self.bot_token:
            return None
        issued = self.tokens.get(token or "")
        if issued is None:
            return "invalid_auth"
        if issued.revoked:
            return "token_revoked"
        if issued.expires_at is not None and issued.expires_at < time.time():
            return "token_expired"
        return None

    # -- the workspace ---------------------------------------------------------------------

    def add_user(self, user_id: str, *, display_name: str, real_name: str | None = None,
                 is_bot: bool = False, tz: str | None = None) -> None:
        self.users[user_id] = {
            "id": user_id, "team_id": self.team_id, "name": display_name.lower(),
            "real_name": real_name or display_name, "is_bot": is_bot,
            "profile": {"display_name": display_name, "real_name": real_name or display_name},
            **({"tz": tz} if tz else {}),
        }

    def add_channel(self, channel_id: str, *, name: str) -> None:
        self.channels[channel_id] = {"id": channel_id, "name": name, "is_channel": True}

    def fail(self, method: str, *, error: str = "ratelimited", status: int = 200,
             retry_after: int | None = None, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with `error` (429 + Retry-After if given)."""
        if retry_after is not None:
            status = 429
        self._failures.setdefault(method, []).append(
            _Failure(error=error, status=status, retry_after=retry_after, remaining=times))

    def hold(self, method: str) -> asyncio.Event:
        """Keep answers to `method` waiting until the returned event is set."""
        return self._holds.setdefault(method, asyncio.Event())

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    async def wait_for_calls(self, method: str, count: int) -> list[ApiCall]:
        """The first `count` calls of `method`, waiting for them (fails rather than hangs)."""
        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: len(self.calls_to(method)) >= count)
        return self.calls_to(method)[:count]

    # -- events ----------------------------------------------------------------------------

    def next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def add_file(self, data: bytes, *, name: str, size: int | None = None) -> dict[str, Any]:
        """A file object as a `file_share` event carries it; its bytes are served at
        `url_private` to requests with the bot token. `size` is what Slack claims."""
        file_id = f"F{len(self.files) + 1:04d}"
        self.files[file_id] = data
        return {"id": file_id, "name": name, "size": len(data) if size is None else size,
                "url_private": f"http://127.0.0.1:{self._port}/files-pri/{file_id}/{name}"}

    def file_at(self, url: str, *, name: str, size: int = 100) -> dict[str, Any]:
        """A file object whose `url_private` is `url`, wherever it points (a forged event)."""
        return {"id": f"F{len(self.files) + 1:04d}", "name": name, "size": size,
                "url_private": url}

    def redirecting_to(self, target: str) -> str:
        """A URL on this fake that answers 302 to `target` (Slack's host sending the bot on)."""
        self.redirects.append(target)
        return f"http://127.0.0.1:{self._port}/files-redirect/{len(self.redirects) - 1}"

    async def _file_redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(self.redirects[int(request.match_info["number"])])

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(status=302, headers={"Location": f"http://127.0.0.1:{self._port}/"})
        if file_id not in self.files:
            return web.Response(status=404)
        self.file_downloads.append(file_id)
        return web.Response(body=self.files[file_id])

    def _get_upload_url(self, params: dict[str, Any]) -> dict[str, Any]:
        """Step 1 of files upload v2: a file id and the URL its bytes go to."""
        file_id = f"F{len(self.files) + 1:04d}"
        self.files[file_id] = b""
        self.pending_uploads[file_id] = {"filename": params.get("filename"),
                                         "length": int(params.get("length") or 0)}
        return {"ok": True, "file_id": file_id,
                "upload_url": f"http://127.0.0.1:{self._port}/upload/v1/{file_id}"}

    async def _receive_upload(self, request: web.Request) -> web.Response:
        """Step 2: the bytes, POSTed to the upload URL."""
        file_id = request.match_info["file_id"]
        if file_id not in self.pending_uploads:
            return web.Response(status=404)
        self.files[file_id] = await request.read()
        return web.Response(text=f"OK - {len(self.files[file_id])}")

    def _complete_upload(self, params: dict[str, Any]) -> dict[str, Any]:
        """Step 3: the uploaded files shared in a channel (and thread)."""
        shared = json.loads(params["files"]) if isinstance(params.get("files"), str) else (
            params.get("files") or [])
        done = []
        for entry in shared:
            pending = self.pending_uploads.pop(entry["id"], None)
            if pending is None:
                return {"ok": False, "error": "file_not_found"}
            self.uploaded.append({"id": entry["id"], "filename": pending["filename"],
                                  "data": self.files[entry["id"]],
                                  "channel": params.get("channel_id"),
                                  "thread_ts": params.get("thread_ts")})
            done.append({"id": entry["id"], "name": pending["filename"]})
        return {"ok": True, "files": done}

    def message_event(
        self, text: str, *, user: str | None = "U0ALICE", channel: str = "C0GENERAL",
        channel_type: str = "channel", thread_ts: str | None = None,
        parent_user_id: str | None = None, bot_id: str | None = None,
        subtype: str | None = None, ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A `message` event as Slack sends it (a fresh `ts` unless given); with `files`
        (from `add_file`) a `file_share`."""
        ts = ts or self.next_ts()
        event: dict[str, Any] = {"type": "message", "channel": channel, "text": text, "ts": ts,
                                 "event_ts": ts, "channel_type": channel_type}
        if files:
            event["files"], subtype = files, subtype or "file_share"
        optional = {"user": user, "thread_ts": thread_ts, "parent_user_id": parent_user_id,
                    "bot_id": bot_id, "subtype": subtype}
        event.update({k: v for k, v in optional.items() if v is not None})
        return event

    def assistant_thread_event(
        self, kind: str = "assistant_thread_started", *, user: str = "U0ALICE",
        channel: str = "D0ALICE", thread_ts: str = "1700000000.000001",
        context_channel: str | None = "C0GENERAL",
    ) -> dict[str, Any]:
        """`assistant_thread_started` or `assistant_thread_context_changed` for one thread."""
        context = {"channel_id": context_channel, "team_id": self.team_id,
                   "enterprise_id": None} if context_channel else {}
        return {"type": kind, "event_ts": self.next_ts(), "assistant_thread": {
            "user_id": user, "context": context, "channel_id": channel,
            "thread_ts": thread_ts}}

    def edit_event(self, original: Mapping[str, Any], text: str) -> dict[str, Any]:
        """`message_changed` for `original`; `text` equal to the old text is an unfurl."""
        message = {k: v for k, v in original.items() if k not in ("channel", "channel_type")}
        message.update(text=text)
        if text != original.get("text"):
            message["edited"] = {"user": original.get("user"), "ts": self.next_ts()}
        else:
            message["attachments"] = [{"from_url": "http://127.0.0.1/", "title": "unfurl"}]
        ts = self.next_ts()
        return {"type": "message", "subtype": "message_changed", "hidden": True,
                "channel": original["channel"], "channel_type": original.get("channel_type"),
                "ts": ts, "event_ts": ts, "message": message,
                "previous_message": {k: v for k, v in original.items() if k != "channel"}}

    def delete_event(self, original: Mapping[str, Any]) -> dict[str, Any]:
        ts = self.next_ts()
        return {"type": "message", "subtype": "message_deleted", "hidden": True,
                "channel": original["channel"], "channel_type": original.get("channel_type"),
                "ts": ts, "event_ts": ts, "deleted_ts": original["ts"],
                "previous_message": {k: v for k, v in original.items() if k != "channel"}}

    def event_callback(self, event: Mapping[str, Any], event_id: str | None = None,
                       team_id: str | None = None) -> dict[str, Any]:
        """The envelope Slack wraps every event in (HTTP body or Socket Mode payload), from
        this workspace or the added team `team_id`."""
        team = self.teams.get(team_id or "")
        bot_user_id = team.bot_user_id if team else self.bot_user_id
        return {
            "token": "legacy-verification-token", "team_id": team_id or self.team_id,
            "api_app_id": "A0FAKE", "event": dict(event), "type": "event_callback",
            "event_id": event_id or f"Ev{next(self._ids):08d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": team_id or self.team_id, "user_id": bot_user_id,
                                "is_bot": True, "is_enterprise_install": False}],
        }

    async def deliver_event(
        self, target_url: str, event: Mapping[str, Any], *, event_id: str | None = None,
        retry_num: int | None = None, retry_reason: str = "http_timeout",
        signing_secret: str | None = None, timestamp: int | None = None,
        team_id: str | None = None,
    ) -> Delivery:
        """POST one signed event to the app; a different `signing_secret` forges it."""
        body = self.event_callback(event, event_id, team_id)
        headers = {}
        if retry_num is not None:
            headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason}
        status, text = await self.post_signed(target_url, json.dumps(body), headers=headers,
                                              signing_secret=signing_secret, timestamp=timestamp)
        return Delivery(event_id=body["event_id"], status=status, body=text)

    async def verify_url(self, target_url: str, challenge: str) -> Delivery:
        body = {"token": "legacy-verification-token", "challenge": challenge,
                "type": "url_verification"}
        status, text = await self.post_signed(target_url, json.dumps(body))
        return Delivery(event_id="", status=status, body=text)

    async def post_signed(
        self, target_url: str, body: str, *, headers: Mapping[str, str] | None = None,
        signing_secret: str | None = None, timestamp: int | None = None,
    ) -> tuple[int, str]:
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        secret = (signing_secret if signing_secret is not None else self.signing_secret)
        digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256)
        sent = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": f"v0={digest.hexdigest()}", **(headers or {})}
        assert self._session is not None, "use FakeSlack as `async with`"
        async with self._session.post(target_url, data=body.encode(), headers=sent) as response:
            return response.status, await response.text()

    # -- slash commands --------------------------------------------------------------------

    def slash_command(self, command: str, text: str = "", *, user: str = "U0ALICE",
                      channel: str = "C0GENERAL") -> dict[str, str]:
        """A slash command payload as Slack sends it (the fields bolt and apps read)."""
        trigger = f"{next(self._ids)}.{next(self._ids)}.fake"
        return {
            "token": "legacy-verification-token", "team_id": self.team_id,
            "team_domain": "fake", "channel_id": channel,
            "channel_name": "directmessage" if channel.startswith("D") else
            self.channels.get(channel, {}).get("name", channel),
            "user_id": user, "user_name": self.users.get(user, {}).get("name", user),
            "command": command, "text": text, "api_app_id": "A0FAKE",
            "is_enterprise_install": "false", "trigger_id": trigger,
            "response_url": f"http://127.0.0.1:{self._port}/commands/{trigger}",
        }

    async def deliver_command(self, target_url: str, payload: Mapping[str, str], *,
                              signing_secret: str | None = None) -> tuple[int, str]:
        """POST a slash command, form-encoded and signed, as Slack does; (status, body)."""
        return await self.post_signed(
            target_url, urllib.parse.urlencode(payload), signing_secret=signing_secret,
            headers={"Content-Type": "application/x-www-form-urlencoded"})

    def block_action(self, blocks: list[dict[str, Any]], label: str, *, user: str = "U0ALICE",
                     channel: str = "C0GENERAL", thread_ts: str | None = None
                     ) -> dict[str, Any]:
        """The `block_actions` payload of `user` pressing the button `label` in `blocks` (an
        ephemeral answer the app posted to a response_url, or a message's blocks): a button
        of an `actions` block, or one half of a `context_actions` block's `feedback_buttons`
        (Slack sends that element's action_id with the pressed half's value)."""
        buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]
                   if e["text"]["text"] == label]
        buttons += [{"type": e["type"], "action_id": e["action_id"], "value": half["value"]}
                    for b in blocks if b["type"] == "context_actions" for e in b["elements"]
                    if e["type"] == "feedback_buttons"
                    for half in (e["positive_button"], e["negative_button"])
                    if half["text"]["text"] == label]
        [button] = buttons
        trigger = f"{next(self._ids)}.{next(self._ids)}.fake"
        container = {"type": "message", "message_ts": self.next_ts(), "channel_id": channel,
                     "is_ephemeral": True}
        if thread_ts:
            container["thread_ts"] = thread_ts
        return {
            "type": "block_actions", "token": "legacy-verification-token",
            "api_app_id": "A0FAKE", "trigger_id": trigger, "container": container,
            "team": {"id": self.team_id, "domain": "fake"},
            "user": {"id": user, "username": self.users.get(user, {}).get("name", user),
                     "team_id": self.team_id},
            "channel": {"id": channel, "name": self.channels.get(channel, {}).get("name", "")},
            "response_url": f"http://127.0.0.1:{self._port}/commands/{trigger}",
            "actions": [{**button, "block_id": "b1", "action_ts": self.next_ts()}],
        }

    async def deliver_action(self, target_url: str, payload: Mapping[str, Any]
                             ) -> tuple[int, str]:
        """POST an interactive payload (`payload=<json>`, form-encoded and signed)."""
        return await self.post_signed(
            target_url, urllib.parse.urlencode({"payload": json.dumps(payload)}),
            headers={"Content-Type": "application/x-www-form-urlencoded"})

    async def send_socket_command(self, payload: Mapping[str, str]) -> dict[str, Any]:
        """Push a `slash_commands` envelope over the newest socket; returns the client's ack."""
        return await self._send_envelope("slash_commands", dict(payload))

    async def wait_for_responses(self, count: int) -> list[tuple[str, dict[str, Any]]]:
        """The first `count` posts to response_urls, waiting for them."""
        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: len(self.responses) >= count)
        return self.responses[:count]

    async def _command_response(self, request: web.Request) -> web.Response:
        async with self._changed:
            self.responses.append((str(request.url), await request.json()))
            self._changed.notify_all()
        return web.Response(text="ok")

    # -- socket mode -----------------------------------------------------------------------

    async def wait_for_socket(self) -> None:
        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: bool(self._sockets))

    async def send_socket_event(
        self, event: Mapping[str, Any], *, event_id: str | None = None, retry_attempt: int = 0,
    ) -> dict[str, Any]:
        """Push an `events_api` envelope over the newest socket; returns the client's ack."""
        acked = await self.push_socket_event(event, event_id=event_id,
                                             retry_attempt=retry_attempt)
        async with asyncio.timeout(WAIT_SECONDS):
            return await acked

    async def push_socket_event(
        self, event: Mapping[str, Any], *, event_id: str | None = None, retry_attempt: int = 0,
    ) -> asyncio.Future[dict[str, Any]]:
        """Push an `events_api` envelope without waiting: the future resolves with its ack."""
        return await self._push_envelope(
            "events_api", self.event_callback(event, event_id),
            retry_attempt=retry_attempt, retry_reason="timeout" if retry_attempt else "")

    async def _send_envelope(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        acked = await self._push_envelope(kind, payload)
        async with asyncio.timeout(WAIT_SECONDS):
            return await acked

    async def _push_envelope(self, kind: str, payload: dict[str, Any],
                             **fields: Any) -> asyncio.Future[dict[str, Any]]:
        await self.wait_for_socket()
        socket = self._sockets[-1]
        envelope_id = f"env-{next(self._ids):08d}"
        acked: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        socket.acks[envelope_id] = acked
        await socket.ws.send_json({"envelope_id": envelope_id, "type": kind,
                                   "accepts_response_payload": kind != "events_api",
                                   **fields, "payload": payload})
        return acked

    async def _socket_endpoint(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        socket = _Socket(ws=ws)
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "connection_info": {"app_id": "A0FAKE"},
                            "debug_info": {"host": "fake", "approximate_connection_time": 3600}})
        async with self._changed:
            self._sockets.append(socket)
            self._changed.notify_all()
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            ack = json.loads(message.data)
            self.socket_acks.append(ack)
            waiter = socket.acks.pop(str(ack.get("envelope_id")), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(ack)
        self._sockets.remove(socket)
        return ws

    # -- Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        authorization = request.headers.get("Authorization", "")
        basic = None
        if authorization.startswith("Basic "):
            user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
            basic, authorization = (user, password), ""
        token = authorization.removeprefix("Bearer ") or params.pop("token", None)
        async with self._changed:
            self.calls.append(ApiCall(method=method, params=params, token=token,
                                      at=time.monotonic()))
            self._changed.notify_all()
        if method in self._holds:
            await self._holds[method].wait()
        headers = {"x-oauth-scopes": ",".join(self.scopes)}
        failure = self._take_failure(method)
        if failure is not None:
            if failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            return web.json_response({"ok": False, "error": failure.error},
                                     status=failure.status, headers=headers)
        if method == "oauth.v2.access":
            return web.json_response(self._oauth_access(params, basic))
        problem = self._token_problem(method, token)
        if problem is not None:
            return web.json_response({"ok": False, "error": problem}, headers=headers)
        if method == "auth.test":
            return web.json_response(self._auth_test_for(token), headers=headers)
        handler = {
            "auth.test": self._auth_test, "chat.postMessage": self._post_message,
            "chat.update": self._update, "chat.startStream": self._start_stream,
            "chat.appendStream": self._append_stream, "chat.stopStream": self._stop_stream,
            "assistant.threads.setStatus": self._set_status, "users.info": self._users_info,
            "conversations.info": self._conversations_info,
            "conversations.history": self._conversations_history,
            "conversations.replies": self._conversations_replies,
            "apps.connections.open": self._connections_open,
            "assistant.threads.setSuggestedPrompts": self._set_suggested_prompts,
            "files.getUploadURLExternal": self._get_upload_url,
            "files.completeUploadExternal": self._complete_upload,
        }.get(method)
        result = handler(params) if handler else {"ok": False, "error": "unknown_method"}
        return web.json_response(result, headers=headers)

    def _take_failure(self, method: str) -> _Failure | None:
        queue = self._failures.get(method)
        if not queue:
            return None
        failure = queue[0]
        failure.remaining -= 1
        if failure.remaining <= 0:
            queue.pop(0)
        return failure

    def _auth_test_for(self, token: str | None) -> dict[str, Any]:
        """`auth.test` as the bot of the workspace the token belongs to."""
        issued = self.tokens.get(token or "")
        if issued is None:
            return self._auth_test({})
        team = self.teams[issued.team_id]
        return {"ok": True, "url": f"http://127.0.0.1:{self._port}/", "team": team.name,
                "user": f"threadline-{team.team_id.lower()}", "team_id": team.team_id,
                "user_id": team.bot_user_id, "bot_id": team.bot_id,
                "is_enterprise_install": False}

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"http://127.0.0.1:{self._port}/", "team": "Fake Team",
                "user": self.bot_name, "team_id": self.team_id, "user_id": self.bot_user_id,
                "bot_id": self.bot_id, "is_enterprise_install": False}

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        text = str(params.get("text") or "")
        if not text:
            return {"ok": False, "error": "no_text"}
        if len(text) > MAX_TEXT_CHARS:
            return {"ok": False, "error": "msg_too_long"}
        ts = self.next_ts()
        message = {"type": "message", "user": self.bot_user_id, "bot_id": self.bot_id,
                   "text": text, "ts": ts}
        if params.get("thread_ts"):
            message["thread_ts"] = params["thread_ts"]
        self.messages[ts] = text
        return {"ok": True, "channel": params.get("channel"), "ts": ts, "message": message}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        ts, text = str(params.get("ts")), str(params.get("text") or "")
        if ts not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        if ts in self.streaming:
            return {"ok": False, "error": "message_is_streaming"}
        if len(text) > MAX_TEXT_CHARS:
            return {"ok": False, "error": "msg_too_long"}
        self.messages[ts] = text
        return {"ok": True, "channel": params.get("channel"), "ts": ts, "text": text}

    def _start_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        if not params.get("recipient_user_id") or not params.get("recipient_team_id"):
            return {"ok": False, "error": "missing_recipient_user_id"}
        ts = self.next_ts()
        self.messages[ts] = str(params.get("markdown_text") or "")
        self.streaming.add(ts)
        return {"ok": True, "channel": params.get("channel"), "ts": ts}

    def _append_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        ts = str(params.get("ts"))
        if ts not in self.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if not params.get("markdown_text"):
            return {"ok": False, "error": "invalid_arguments"}
        self.messages[ts] += str(params["markdown_text"])
        return {"ok": True, "channel": params.get("channel"), "ts": ts}

    def _stop_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        ts = str(params.get("ts"))
        if ts not in self.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self.messages[ts] += str(params.get("markdown_text") or "")
        self.streaming.discard(ts)
        return {"ok": True, "channel": params.get("channel"), "ts": ts,
                "message": {"type": "message", "text": self.messages[ts], "ts": ts}}

    def _set_status(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel_id") or not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        self.statuses[(str(params["channel_id"]), str(params["thread_ts"]))] = str(
            params.get("status", ""))
        return {"ok": True}

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(params.get("user")))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    def _conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self.channels.get(str(params.get("channel")))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": channel}

    def _earlier_before(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The channel's messages older than `latest` (newer too with `inclusive`)."""
        latest = float(params.get("latest") or "inf")
        inclusive = str(params.get("inclusive", "")).lower() in ("1", "true")
        return [m for m in self.earlier.get(str(params.get("channel")), [])
                if float(m["ts"]) < latest or (inclusive and float(m["ts"]) == latest)]

    def _conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        """Top-level messages, newest first, at most `limit` (Slack's order)."""
        if str(params.get("channel")) not in self.earlier:
            return {"ok": False, "error": "channel_not_found"}
        top = [m for m in self._earlier_before(params)
               if m.get("thread_ts") in (None, m["ts"])][::-1]
        limit = int(params.get("limit") or 100)
        return {"ok": True, "messages": top[:limit], "has_more": len(top) > limit}

    def _conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """A thread's parent and replies, oldest first, at most `limit` (Slack's order)."""
        thread = str(params.get("ts"))
        replies = [m for m in self._earlier_before(params)
                   if m["ts"] == thread or m.get("thread_ts") == thread]
        if not replies:
            return {"ok": False, "error": "thread_not_found"}
        limit = int(params.get("limit") or 100)
        return {"ok": True, "messages": replies[:limit], "has_more": len(replies) > limit}

    def said_earlier(self, text: str, *, user: str = "U0ALICE", channel: str = "C0GENERAL",
                     thread_ts: str | None = None) -> dict[str, Any]:
        """A message people sent before the bot heard it, as conversations.history returns
        it (the same message can be delivered as an event later: `message_event` of it)."""
        ts = self.next_ts()
        message: dict[str, Any] = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        self.earlier.setdefault(channel, []).append(message)
        return message

    def _set_suggested_prompts(self, params: dict[str, Any]) -> dict[str, Any]:
        prompts = params.get("prompts")
        if isinstance(prompts, str):  # sent as a form field
            prompts = json.loads(prompts)
        if not params.get("channel_id") or not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(prompts, list) or not 1 <= len(prompts) <= 4 or not all(
                p.get("title") and p.get("message") for p in prompts):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def _connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self._port}/socket?ticket=fake"}


def fake_slack_fixture() -> Callable[[], AsyncIterator[FakeSlack]]:
    """A pytest fixture serving a fresh fake with Alice (`U0ALICE`) and `#general`
    (`C0GENERAL`): `slack = fake_slack_fixture()`."""

    @pytest.fixture
    async def slack() -> AsyncIterator[FakeSlack]:
        async with FakeSlack() as fake:
            fake.add_user("U0ALICE", display_name="Alice")
            fake.add_channel("C0GENERAL", name="general")
            yield fake

    return slack


@asynccontextmanager
async def slack_rig(
    sqlite_url: str, *, mode: str = "http",
    events_factory: Callable[[ConversationStore], RecordingEvents] = RecordingEvents,
    **overrides: Any,
) -> AsyncIterator[tuple[FakeSlack, SlackChannel, RecordingEvents]]:
    """A started `SlackChannel` on a `FakeSlack`, delivering to `RecordingEvents` on SQLite.

    The workspace has Alice (`U0ALICE`) and `#general` (`C0GENERAL`); `overrides` go to the
    channel's constructor, `events_factory` builds the events from the store.
    """
    async with FakeSlack() as fake, SqlConversationStore(sqlite_url) as store:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        channel = SlackChannel(**{**fake.channel_settings(mode=mode), **overrides})
        events = events_factory(store)
        await channel.start(events)
        try:
            yield fake, channel, events
        finally:
            await channel.stop()
