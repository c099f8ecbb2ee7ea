"""A small Discord on 127.0.0.1: the REST routes and the gateway websocket discord.py uses.

    async with FakeDiscord() as fake:
        guild = fake.add_guild(name="Lab")
        general = fake.add_text_channel(guild, name="general")
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.05)
        await channel.start(events)
        await fake.deliver_message(general, author=fake.add_user("ada"), content="hi")
        await fake.wait_for_posts(1)
        fake.posts  # JSON bodies of the messages the bot posted, in order

It speaks the wire protocol as discord.py expects it: JSON answered with exactly
`application/json`, optional fields left out rather than null, `Via` on 429s; the gateway sends
HELLO, answers heartbeats, answers IDENTIFY with READY and one GUILD_CREATE per guild,
dispatches events with increasing `s`, compresses with zlib-stream or zstd-stream when asked,
and closes with 4004 for a wrong token and 4014 when a privileged intent was asked for but not
granted. Like Discord, a session outlives its connection unless the client closed it cleanly
(1000, 1001): events dispatched while it has none are kept, and a RESUME with its id and a
sequence replays every event after that sequence, then RESUMED (counted in `resumes`); a RESUME
of a session it does not know is answered with INVALID_SESSION (so the client identifies
again). `accepting`, cleared, holds new connections (a slow network); `send_unreadable_frame`
sends a frame cut short, as a broken proxy would (no event: a resume does not replay it).
Like Discord, the bot's own posts are dispatched back to it as MESSAGE_CREATE. Replies can be
streamed: message edits (`PATCH`), deletions and the typing indicator are served, and
`contents` holds what each of the bot's messages shows now. Every REST call is recorded in
`calls` with the time it arrived; `fail_next` injects 429s, 403s and 404s.

Application commands: a bulk overwrite (`PUT /applications/ID/commands`) is checked as Discord
checks names and descriptions and kept in `app_commands`; `deliver_command` dispatches
INTERACTION_CREATE for one invocation; the interaction callback and its follow-ups (webhook
posts, refused before the callback as Discord does) are kept in `interaction_callbacks` and
`followups`.

Sharding: `GET /gateway/bot` recommends `recommended_shards`; a session that identifies with
`shard: [id, count]` receives only the guilds and events of shard `(guild_id >> 22) % count`,
and DMs only on shard 0. Like Discord, a second session identifying a shard already connected
is accepted and receives the same events (Discord does not stop a bot from doing so): the fake
counts it instead, in `identifies` and `most_sessions_per_shard`, so a test can assert "never
two". `dispatched` records which session received each message (`Dispatch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self

from aiohttp import WSMsgType, web

from threadline.channels.base import ChannelEvents
from threadline.channels.discord import DiscordChannel

DISCORD_EPOCH_MS = 1_420_070_400_000
MESSAGE_CONTENT_INTENT = 1 << 15
PRIVILEGED_INTENTS = (1 << 1) | (1 << 8) | MESSAGE_CONTENT_INTENT
APP_FLAG_MESSAGE_CONTENT = 1 << 19
TEXT, DM, PUBLIC_THREAD = 0, 1, 11

Json = dict[str, Any]


@dataclass
class RecordedCall:
    """One REST request the fake received."""

    method: str
    path: str
    json: Any
    status: int
    authorization: str | None
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass
class Failure:
    """An injected answer for the next `times` requests matching method and path pattern."""

    method: str
    path: re.Pattern[str]
    status: int
    times: int
    retry_after: float
    is_global: bool
    code: int


@dataclass
class FakeUser:
    id: str
    username: str
    global_name: str | None = None
    bot: bool = False

    def payload(self) -> Json:
        data: Json = {"id": self.id, "username": self.username, "discriminator": "0",
                      "avatar": None}
        if self.global_name:
            data["global_name"] = self.global_name
        if self.bot:
            data["bot"] = True
        return data


@dataclass
class FakeGuild:
    id: str
    name: str
    channels: list[Json] = field(default_factory=list)
    threads: list[Json] = field(default_factory=list)
    roles: list[Json] = field(default_factory=list)
    members: dict[str, Json] = field(default_factory=dict)


@dataclass(frozen=True)
class Dispatch:
    """One MESSAGE_CREATE sent on one gateway session (numbered in connection order)."""

    message_id: str
    session: int
    shard: int | None  # None: the session did not shard


def shard_for(guild_id: str | None, count: int) -> int:
    """Discord's routing: a guild's shard; DMs (no guild) go to shard 0."""
    return 0 if guild_id is None else (int(guild_id) >> 22) % count


class _Session:
    """One gateway connection: its socket, compression, sequence counter and shard."""

    def __init__(self, ws: web.WebSocketResponse, compression: str | None,
                 number: int) -> None:
        self.ws: web.WebSocketResponse | None = ws  # None: the session has no connection now
        self.number = number
        self.session_id = ""
        self.events: list[tuple[int, str]] = []  # (s, frame) of every dispatch, for resumes
        self.shard: tuple[int, int] | None = None  # (id, count) from IDENTIFY
        self.sequence = 0
        self.identified = asyncio.Event()
        self.intents = 0
        self._compress: Callable[[bytes], bytes] | None = None
        if compression == "zlib-stream":
            stream = zlib.compressobj()
            self._compress = lambda raw: stream.compress(raw) + stream.flush(zlib.Z_SYNC_FLUSH)
        elif compression == "zstd-stream":
            import zstandard

            zstd = zstandard.ZstdCompressor().compressobj()
            self._compress = lambda raw: zstd.compress(raw) + zstd.flush(
                zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def receives(self, guild_id: str | None) -> bool:
        """Whether this session gets a guild's events (None: a DM)."""
        return self.shard is None or shard_for(guild_id, self.shard[1]) == self.shard[0]

    async def send(self, payload: Json) -> None:
        await self.send_raw(json.dumps(payload))

    async def send_raw(self, raw: str) -> None:
        if self.ws is None:
            return
        if self._compress is None:
            await self.ws.send_str(raw)
        else:
            await self.ws.send_bytes(self._compress(raw.encode()))

    async def dispatch(self, event: str, data: Json) -> None:
        self.sequence += 1
        await self.dispatch_raw(json.dumps({"op": 0, "t": event, "s": self.sequence, "d": data}))

    async def dispatch_raw(self, frame: str) -> None:
        """Send the frame of dispatch number `sequence`, and keep it to replay on a resume."""
        self.events.append((self.sequence, frame))
        await self.send_raw(frame)

    def take_connection(self, other: _Session) -> None:
        """Go on over `other`'s connection (a RESUME came on it)."""
        self.ws, self._compress = other.ws, other._compress


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly application/json: discord.py compares the header literally.
    return web.Response(body=json.dumps(data).encode(), status=status,
                        headers={"Content-Type": "application/json", **(headers or {})})


class FakeDiscord:
    """Discord's REST API and gateway for one bot, on a free port of 127.0.0.1."""

    def __init__(self, *, token: str = "fake-bot-token", bot_name: str = "threadline",
                 grant_message_content: bool = True, heartbeat_interval_ms: int = 41_250,
                 echo_own_messages: bool = True, recommended_shards: int = 1) -> None:
        self.token = token
        self.recommended_shards = recommended_shards
        self.identifies: Counter[int | None] = Counter()  # per shard id (None: unsharded)
        self.most_sessions_per_shard: Counter[int] = Counter()  # the most live at once
        self.dispatched: list[Dispatch] = []
        self._session_numbers = itertools.count(1)
        self.grant_message_content = grant_message_content
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.echo_own_messages = echo_own_messages
        self._ids = itertools.count(1)
        self._last_snowflake = 0
        self.application_id = self.snowflake()
        self.bot = FakeUser(self.snowflake(), bot_name, bot=True)
        self.guilds: dict[str, FakeGuild] = {}
        # Every channel by id, with its guild (None for DMs): what REST and payloads look up.
        self.channels: dict[str, tuple[FakeGuild | None, Json]] = {}
        self.messages: dict[str, Json] = {}
        self.calls: list[RecordedCall] = []
        self.posts: list[Json] = []  # the bodies the bot posted, in order
        self.posted: list[Json] = []  # the messages those posts created, as Discord answered
        self.contents: dict[str, str] = {}  # the bot's messages not deleted: what each shows
        self.gateway_closes: list[int] = []
        self.app_commands: list[Json] = []  # as the last bulk overwrite set them
        self.interaction_callbacks: list[Json] = []  # bodies posted to .../callback
        self.followups: list[Json] = []  # bodies posted to the interaction webhook
        self.followup_messages: list[Json] = []  # the messages those follow-ups created
        self._interactions: dict[str, Json] = {}  # token -> the interaction
        self._acknowledged: set[str] = set()  # tokens whose interaction got its callback
        self._failures: list[Failure] = []
        self._sessions: list[_Session] = []
        self._detached: dict[str, _Session] = {}  # session id -> a session without connection
        self.resumes = 0
        self.accepting = asyncio.Event()  # cleared: new gateway connections wait (a slow network)
        self.accepting.set()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.attachments: dict[str, bytes] = {}  # attachment id -> bytes at its CDN url
        self.attachment_downloads: list[str] = []
        self.uploaded: list[dict[str, Any]] = []  # files the bot attached to its messages

    # -- server lifecycle ------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway_socket)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        app.router.add_get("/attachments/{file_id}/{name}", self._attachment)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for session in list(self._sessions):
            await session.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base_url(self) -> str:
        return f"{self.url}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- world building --------------------------------------------------------------------

    def snowflake(self) -> str:
        """A fresh, increasing snowflake that encodes the current time like Discord's."""
        now = ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(self._ids) & 0xFFF)
        self._last_snowflake = max(now, self._last_snowflake + 1)
        return str(self._last_snowflake)

    def add_user(self, username: str, *, global_name: str | None = None,
                 bot: bool = False) -> FakeUser:
        return FakeUser(self.snowflake(), username, global_name, bot)

    def add_guild(self, *, name: str = "Test server",
                  shard: tuple[int, int] | None = None) -> FakeGuild:
        """A guild; `shard` (id, count) picks an id Discord routes to that shard."""
        guild_id = self.snowflake()
        if shard is not None:
            wanted, count = shard
            moment = int(guild_id) >> 22  # the timestamp part, moved up by less than `count` ms
            moment += (wanted - moment) % count
            guild_id = str((moment << 22) | (int(guild_id) & 0x3FFFFF))
            self._last_snowflake = max(self._last_snowflake, int(guild_id))
        guild = FakeGuild(guild_id, name)
        guild.roles.append({"id": guild.id, "name": "@everyone", "permissions": "1024"})
        self.guilds[guild.id] = guild
        self.add_member(guild, self.bot)
        return guild

    def add_member(self, guild: FakeGuild, user: FakeUser, *, nick: str | None = None,
                   roles: tuple[str, ...] = ()) -> None:
        member: Json = {"user": user.payload(), "roles": list(roles), "flags": 0,
                        "joined_at": "2024-01-01T00:00:00+00:00", "deaf": False, "mute": False}
        if nick:
            member["nick"] = nick
        guild.members[user.id] = member

    def add_role(self, guild: FakeGuild, *, name: str, held_by_bot: bool = False,
                 managed_for_bot: bool = False) -> str:
        role: Json = {"id": self.snowflake(), "name": name, "permissions": "0", "position": 1}
        if managed_for_bot:
            role["managed"] = True
            role["tags"] = {"bot_id": self.bot.id}
        guild.roles.append(role)
        if held_by_bot:
            guild.members[self.bot.id]["roles"].append(role["id"])
        return str(role["id"])

    def add_text_channel(self, guild: FakeGuild, *, name: str) -> str:
        channel = {"id": self.snowflake(), "type": TEXT, "guild_id": guild.id, "name": name,
                   "position": len(guild.channels), "permission_overwrites": []}
        guild.channels.append(channel)
        self.channels[str(channel["id"])] = (guild, channel)
        return str(channel["id"])

    def add_thread(self, guild: FakeGuild, *, parent_id: str, name: str, owner: FakeUser,
                   announce: bool = True) -> str:
        """A public thread; listed in GUILD_CREATE unless `announce` is False (then only a
        REST fetch of the channel knows it, as for a thread the client never saw created)."""
        thread = {"id": self.snowflake(), "type": PUBLIC_THREAD, "guild_id": guild.id,
                  "parent_id": parent_id, "owner_id": owner.id, "name": name,
                  "message_count": 0, "member_count": 1, "rate_limit_per_user": 0,
                  "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                      "archive_timestamp": _timestamp(), "locked": False}}
        if announce:
            guild.threads.append(thread)
        self.channels[str(thread["id"])] = (guild, thread)
        return str(thread["id"])

    def add_dm(self, user: FakeUser) -> str:
        channel = {"id": self.snowflake(), "type": DM, "recipients": [user.payload()]}
        self.channels[str(channel["id"])] = (None, channel)
        return str(channel["id"])

    def fail_next(self, method: str, path: str, *, status: int, times: int = 1,
                  retry_after: float = 0.05, is_global: bool = False, code: int = 0) -> None:
        """Answer the next `times` requests to `path` (a regex) with `status` instead."""
        self._failures.append(Failure(method.upper(), re.compile(path), status, times,
                                      retry_after, is_global, code))

    # -- gateway events --------------------------------------------------------------------

    def add_attachment(self, data: bytes, *, name: str, size: int | None = None) -> Json:
        """An attachment object as a message carries it, its bytes served at its CDN `url`;
        `size` is what the event claims."""
        file_id = self.snowflake()
        self.attachments[file_id] = data
        url = f"{self.url}/attachments/{file_id}/{name}"
        return {"id": file_id, "filename": name, "size": len(data) if size is None else size,
                "url": url, "proxy_url": url}

    async def _attachment(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.attachments:
            return web.Response(status=404)
        self.attachment_downloads.append(file_id)
        return web.Response(body=self.attachments[file_id])

    def message_payload(self, channel_id: str, *, author: FakeUser, content: str,
                        message_id: str | None = None, reply_to: str | None = None,
                        mentions: tuple[FakeUser, ...] = (),
                        mention_roles: tuple[str, ...] = (),
                        attachments: tuple[Json, ...] = ()) -> Json:
        """A MESSAGE_CREATE payload as Discord sends it for a message in `channel_id`."""
        guild = self._guild_of(channel_id)
        message: Json = {
            "id": message_id or self.snowflake(), "channel_id": channel_id,
            "author": author.payload(), "content": content, "timestamp": _timestamp(),
            "edited_timestamp": None, "tts": False, "mention_everyone": False,
            "mentions": [self._mention(guild, user) for user in mentions],
            "mention_roles": list(mention_roles), "attachments": list(attachments),
            "embeds": [],
            "pinned": False, "type": 0, "flags": 0,
        }
        if guild is not None:
            message["guild_id"] = guild.id
            member = guild.members.get(author.id)
            if member is not None:
                message["member"] = {k: v for k, v in member.items() if k != "user"}
        if reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {"message_id": reply_to, "channel_id": channel_id}
            if guild is not None:
                message["message_reference"]["guild_id"] = guild.id
            if reply_to in self.messages:
                message["referenced_message"] = self.messages[reply_to]
        return message

    async def deliver_message(self, channel_id: str, *, author: FakeUser, content: str,
                              **options: Any) -> Json:
        """Dispatch a new message to every connected bot session; returns its payload."""
        message = self.message_payload(channel_id, author=author, content=content, **options)
        await self.deliver("MESSAGE_CREATE", message)
        return message

    def interaction_payload(self, channel_id: str, *, user: FakeUser, name: str,
                            text: str | None = None) -> Json:
        """INTERACTION_CREATE data for one invocation of the application command `name`."""
        guild = self._guild_of(channel_id)
        command: Json = {"id": self.snowflake(), "name": name, "type": 1}
        if text is not None:
            command["options"] = [{"name": "text", "type": 3, "value": text}]
        channel = self.channels[channel_id][1]
        payload: Json = {
            "id": self.snowflake(), "application_id": self.application_id, "type": 2,
            "data": command, "channel_id": channel_id, "channel": channel,
            "token": f"interaction-token-{self.snowflake()}", "version": 1,
            "locale": "en-US", "app_permissions": "2248473465835073", "entitlements": [],
            "attachment_size_limit": 10_485_760,
        }
        if guild is not None:
            member = guild.members.get(user.id, {"roles": [], "joined_at": _timestamp()})
            payload.update(guild_id=guild.id, guild_locale="en-US", context=0,
                           authorizing_integration_owners={"0": guild.id},
                           member={**member, "user": user.payload(), "deaf": False,
                                   "mute": False, "permissions": "2248473465835073"})
        else:
            payload.update(user=user.payload(), context=1,
                           authorizing_integration_owners={"1": user.id})
        return payload

    async def deliver_command(self, channel_id: str, *, user: FakeUser, name: str,
                              text: str | None = None) -> Json:
        """Dispatch one application command invocation; returns its payload."""
        interaction = self.interaction_payload(channel_id, user=user, name=name, text=text)
        self._interactions[interaction["token"]] = interaction
        await self.deliver("INTERACTION_CREATE", interaction)
        return interaction

    async def press_button(self, message: Json, label: str, *, user: FakeUser) -> Json:
        """Dispatch `user` pressing the button `label` of `message` (a follow-up the bot sent,
        from `followup_messages`); returns the interaction."""
        [button] = [c for row in message.get("components", []) for c in row["components"]
                    if c.get("label") == label]
        interaction = self.interaction_payload(message["channel_id"], user=user, name="")
        interaction.update(type=3, message=message, data={
            "custom_id": button["custom_id"], "component_type": button["type"]})
        self._interactions[interaction["token"]] = interaction
        await self.deliver("INTERACTION_CREATE", interaction)
        return interaction

    async def wait_for_followups(self, count: int) -> list[Json]:
        await self.wait_until(lambda: len(self.followups) >= count)
        return self.followups

    async def deliver_edit(self, message: Json, content: str) -> Json:
        edited = {**message, "content": content, "edited_timestamp": _timestamp()}
        await self.deliver("MESSAGE_UPDATE", edited)
        return edited

    async def deliver_delete(self, message: Json) -> None:
        data = {"id": message["id"], "channel_id": message["channel_id"]}
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
        await self.deliver("MESSAGE_DELETE", data)

    def said_earlier(self, channel_id: str, *, author: FakeUser, content: str) -> Json:
        """A message said before the bot was there: in the channel's history (served by
        GET /channels/{id}/messages), not dispatched; `deliver_message`-able later."""
        message = self.message_payload(channel_id, author=author, content=content)
        self.messages[message["id"]] = message
        return message

    def _history(self, channel_id: str, query: Mapping[str, str]) -> web.Response:
        """A channel's messages, newest first, at most `limit`: those before `before`, or the
        oldest ones after `after` (Discord's)."""
        if channel_id not in self.channels:
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        limit = int(query.get("limit") or 50)
        said = sorted((m for m in self.messages.values() if m["channel_id"] == channel_id),
                      key=lambda m: int(m["id"]))
        if "after" in query:
            found = [m for m in said if int(m["id"]) > int(query["after"])][:limit]
        else:
            before = int(query.get("before") or 2**63)
            found = [m for m in said if int(m["id"]) < before][-limit:]
        return _json(found[::-1])

    async def deliver(self, event: str, data: Json) -> None:
        """Dispatch any event (again, for a duplicate delivery) to every identified session."""
        if event == "MESSAGE_CREATE":
            self.messages[data["id"]] = data
        guild_id = data.get("guild_id")
        for session in [*self._sessions, *self._detached.values()]:
            await session.identified.wait()
            if not session.receives(guild_id):
                continue
            if event == "MESSAGE_CREATE" and session.ws is not None:  # else kept to replay
                self.dispatched.append(Dispatch(
                    data["id"], session.number,
                    session.shard[0] if session.shard is not None else None))
            await session.dispatch(event, data)

    async def deliver_raw(self, event: str, data_json: str) -> None:
        """Dispatch `event` with `data_json` as its `d`, written as given (JSON nested deeper
        than any parser allows, say), to every identified session."""
        for session in [*self._sessions, *self._detached.values()]:
            await session.identified.wait()
            session.sequence += 1
            await session.dispatch_raw(
                f'{{"op": 0, "t": "{event}", "s": {session.sequence}, "d": {data_json}}}')

    async def send_unreadable_frame(self) -> None:
        """Send every connected session a frame cut short: no client can decode it."""
        for session in list(self._sessions):
            await session.identified.wait()
            await session.send_raw('{"op": 0, "t": "MESSAGE_CRE')

    @property
    def detached_sessions(self) -> int:
        """Sessions whose connection closed, kept for a resume."""
        return len(self._detached)

    @property
    def identified_sessions(self) -> int:
        """Gateway connections that identified (a reconnecting client makes a new one)."""
        return sum(1 for s in self._sessions if s.identified.is_set())

    def live_shards(self) -> Counter[int]:
        """Identified sessions open now, per shard id."""
        return Counter(s.shard[0] for s in self._sessions
                       if s.identified.is_set() and s.shard is not None)

    async def wait_until(self, condition: Callable[[], bool], *, within: float = 5.0) -> None:
        """Wait until `condition()` holds after some request; fails after `within` seconds,
        not hanging."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(condition)

    async def wait_for_posts(self, count: int) -> list[Json]:
        await self.wait_until(lambda: len(self.posts) >= count)
        return self.posts

    def calls_to(self, method: str, path: str) -> list[RecordedCall]:
        pattern = re.compile(path)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

    # -- internals ------------------------------------------------------------------------

    def _guild_of(self, channel_id: str) -> FakeGuild | None:
        return self.channels.get(channel_id, (None, {}))[0]

    def _mention(self, guild: FakeGuild | None, user: FakeUser) -> Json:
        data = user.payload()
        member = guild.members.get(user.id) if guild is not None else None
        if member is not None:
            data["member"] = {k: v for k, v in member.items() if k != "user"}
        return data

    def _guild_create(self, guild: FakeGuild) -> Json:
        return {"id": guild.id, "name": guild.name, "unavailable": False, "large": False,
                "owner_id": self.bot.id, "member_count": len(guild.members),
                "joined_at": "2024-01-01T00:00:00+00:00", "roles": guild.roles,
                "channels": guild.channels, "threads": guild.threads,
                "members": list(guild.members.values()), "emojis": [], "stickers": [],
                "features": [], "voice_states": [], "presences": []}

    async def _gateway_socket(self, request: web.Request) -> web.StreamResponse:
        await self.accepting.wait()
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = _Session(ws, request.query.get("compress"), next(self._session_numbers))
        self._sessions.append(session)
        try:
            await session.send({"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}})
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    break
                session = await self._gateway_op(session, json.loads(frame.data))
        finally:
            self._sessions.remove(session)
            # Like Discord, a clean close (1000, 1001) ends the session; any other keeps it.
            if session.identified.is_set() and ws.close_code not in (1000, 1001):
                session.ws = None
                self._detached[session.session_id] = session
            async with self._changed:
                self._changed.notify_all()
        return ws

    async def _gateway_op(self, session: _Session, payload: Json) -> _Session:
        """Answer one frame from the client; the session the connection serves from now on."""
        op, data = payload.get("op"), payload.get("d")
        if op == 1:
            await session.send({"op": 11})
        elif op == 6:
            return await self._resume(session, data)
        elif op == 2:
            if data["token"] != self.token:
                await self._close(session, 4004)
                return session
            session.intents = int(data.get("intents", 0))
            if session.intents & MESSAGE_CONTENT_INTENT and not self.grant_message_content:
                await self._close(session, 4014)
                return session
            if "shard" in data:
                shard_id, count = data["shard"]
                session.shard = (int(shard_id), int(count))
            self.identifies[session.shard[0] if session.shard else None] += 1
            guilds = [g for g in self.guilds.values() if session.receives(g.id)]
            session.session_id = f"session-{self.snowflake()}"
            ready: Json = {
                "v": 10, "user": self.bot.payload(), "session_id": session.session_id,
                "resume_gateway_url": self.gateway_url, "private_channels": [],
                "guilds": [{"id": g.id, "unavailable": True} for g in guilds],
                "application": {"id": self.application_id, "flags": self._application_flags()},
            }
            if "shard" in data:
                ready["shard"] = data["shard"]
            await session.dispatch("READY", ready)
            for guild in guilds:
                await session.dispatch("GUILD_CREATE", self._guild_create(guild))
            session.identified.set()
            for shard, live in self.live_shards().items():
                self.most_sessions_per_shard[shard] = max(
                    self.most_sessions_per_shard[shard], live)
            async with self._changed:
                self._changed.notify_all()
        return session

    async def _resume(self, connection: _Session, data: Json) -> _Session:
        """RESUME: the session named goes on over this connection, the events it missed
        replayed; an unknown one is refused as Discord refuses it."""
        session = self._detached.pop(str(data.get("session_id")), None)
        if data.get("token") != self.token or session is None:
            await connection.send({"op": 9, "d": False})
            return connection
        session.take_connection(connection)
        self._sessions[self._sessions.index(connection)] = session
        self.resumes += 1
        missed = [frame for number, frame in session.events if number > int(data["seq"] or 0)]
        for frame in missed:
            await session.send_raw(frame)
        await session.dispatch("RESUMED", {})
        return session

    async def _close(self, session: _Session, code: int) -> None:
        self.gateway_closes.append(code)
        await session.ws.close(code=code)

    def _application_flags(self) -> int:
        return APP_FLAG_MESSAGE_CONTENT if self.grant_message_content else 0

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        if request.content_type == "multipart/form-data":  # a message with attachments
            form = await request.post()
            body = json.loads(str(form["payload_json"]))
            for value in form.values():
                if isinstance(value, web.FileField):
                    self.uploaded.append({"path": path, "filename": value.filename,
                                          "data": value.file.read()})
        else:
            body = await request.json() if request.can_read_body else None
        history = re.fullmatch(r"/channels/(\d+)/messages", path)
        if history and request.method == "GET" and request.headers.get(
                "Authorization") == f"Bot {self.token}":
            response = self._history(history[1], request.query)
        else:
            response = self._answer(request.method, path, body,
                                    request.headers.get("Authorization"))
        self.calls.append(RecordedCall(request.method, path, body, response.status,
                                       request.headers.get("Authorization"), time.monotonic()))
        posted = response.status == 200 and request.method == "POST" and path.endswith("/messages")
        if posted and self.echo_own_messages:
            await self.deliver("MESSAGE_CREATE", json.loads(response.body))  # type: ignore[arg-type]
        async with self._changed:
            self._changed.notify_all()
        return response

    def _answer(self, method: str, path: str, body: Any, auth: str | None) -> web.Response:
        interaction = re.fullmatch(r"/interactions/(\d+)/([\w-]+)/callback", path)
        if interaction and method == "POST":  # authorized by the token in the path
            return self._interaction_callback(interaction[2], body)
        followup = re.fullmatch(r"/webhooks/(\d+)/([\w-]+)", path)
        if followup and method == "POST":
            return self._followup(followup[2], body)
        if auth != f"Bot {self.token}":
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        for failure in self._failures:
            if failure.times > 0 and failure.method == method and failure.path.fullmatch(path):
                failure.times -= 1
                return self._failure_response(failure)
        if method == "GET" and path == "/users/@me":
            return _json(self.bot.payload())
        if method == "GET" and path == "/oauth2/applications/@me":
            return _json({"id": self.application_id, "name": self.bot.username,
                          "description": "", "icon": None, "bot_public": True,
                          "bot_require_code_grant": False, "verify_key": "0" * 64,
                          "owner": self.add_user("owner").payload(),
                          "flags": self._application_flags(),
                          "approximate_guild_count": len(self.guilds)})
        if method == "GET" and path in ("/gateway", "/gateway/bot"):
            return _json({"url": self.gateway_url, "shards": self.recommended_shards,
                          "session_start_limit": {"total": 1000, "remaining": 999,
                                                  "reset_after": 0, "max_concurrency": 1}})
        commands = re.fullmatch(r"/applications/(\d+)/commands", path)
        if commands and method == "PUT":
            return self._overwrite_commands(body)
        match = re.fullmatch(r"/channels/(\d+)(/messages)?", path)
        if match and method == "GET" and not match[2]:
            return self._channel(match[1])
        if match and method == "POST" and match[2]:
            return self._post_message(match[1], body)
        if (typing := re.fullmatch(r"/channels/(\d+)/typing", path)) and method == "POST":
            return (web.Response(status=204) if typing[1] in self.channels
                    else _json({"message": "Unknown Channel", "code": 10003}, 404))
        one = re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path)
        if one and method == "PATCH":
            return self._edit_message(one[2], body)
        if one and method == "DELETE":
            if self.contents.pop(one[2], None) is None:
                return _json({"message": "Unknown Message", "code": 10008}, 404)
            return web.Response(status=204)
        return _json({"message": "404: Not Found", "code": 0}, 404)

    def _edit_message(self, message_id: str, body: Json) -> web.Response:
        message = self.messages.get(message_id)
        if message is None or message_id not in self.contents:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        # As Discord: a field the edit leaves out (components only, say) stays as it was.
        content = body["content"] or "" if "content" in body else message["content"]
        if len(content) > 2000:
            return _too_long()
        edited = {**message, "content": content, "edited_timestamp": _timestamp()}
        if "components" in body:
            edited["components"] = body["components"]
        self.messages[message_id] = edited
        self.contents[message_id] = content
        return _json(edited)

    def _overwrite_commands(self, body: list[Json]) -> web.Response:
        for command in body:
            name, description = command.get("name", ""), command.get("description", "")
            if not re.fullmatch(r"[-_a-z0-9]{1,32}", name) or not 1 <= len(description) <= 100:
                return _json({"message": "Invalid Form Body", "code": 50035, "errors": {
                    "name": {"_errors": [{"code": "APPLICATION_COMMAND_INVALID_NAME",
                                          "message": f"Invalid command {name!r}"}]}}}, 400)
        self.app_commands = [{**c, "id": self.snowflake(), "application_id": self.application_id,
                              "version": self.snowflake(), "type": c.get("type", 1)}
                             for c in body]
        return _json(self.app_commands)

    def _interaction_callback(self, token: str, body: Json) -> web.Response:
        interaction = self._interactions.get(token)
        if interaction is None:
            return _json({"message": "Unknown interaction", "code": 10062}, 404)
        self.interaction_callbacks.append(body)
        self._acknowledged.add(token)
        data = body.get("data") or {}
        return _json({"interaction": {
            "id": interaction["id"], "type": 2,
            "response_message_loading": body.get("type") == 5,
            "response_message_ephemeral": bool(data.get("flags", 0) & 64)},
            "resource": {"type": body.get("type")}})

    def _followup(self, token: str, body: Json) -> web.Response:
        interaction = self._interactions.get(token)
        if interaction is None or token not in self._acknowledged:
            return _json({"message": "Unknown Webhook", "code": 10015}, 404)
        content = body.get("content") or ""
        if len(content) > 2000:
            return _json({"message": "Invalid Form Body", "code": 50035}, 400)
        self.followups.append(body)
        message = self.message_payload(interaction["channel_id"], author=self.bot,
                                       content=content)
        message["webhook_id"] = self.application_id
        message["flags"] = body.get("flags", 0)
        if body.get("components"):
            message["components"] = body["components"]
        self.followup_messages.append(message)
        return _json(message)

    def _channel(self, channel_id: str) -> web.Response:
        if channel_id in self.channels:
            return _json(self.channels[channel_id][1])
        return _json({"message": "Unknown Channel", "code": 10003}, 404)

    def _post_message(self, channel_id: str, body: Json) -> web.Response:
        if channel_id not in self.channels:
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        content = body.get("content") or ""
        if len(content) > 2000:
            return _too_long()
        reference = body.get("message_reference")
        message = self.message_payload(
            channel_id, author=self.bot, content=content,
            reply_to=str(reference["message_id"]) if reference else None)
        self.posts.append(body)
        self.posted.append(message)
        self.messages[message["id"]] = message
        self.contents[message["id"]] = content
        return _json(message)

    def _failure_response(self, failure: Failure) -> web.Response:
        if failure.status == 429:
            return _json(
                {"message": "You are being rate limited.", "retry_after": failure.retry_after,
                 "global": failure.is_global},
                429,
                {"Via": "1.1 google", "Retry-After": str(max(1, round(failure.retry_after))),
                 "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0",
                 "X-RateLimit-Reset-After": str(failure.retry_after),
                 "X-RateLimit-Bucket": "fake-bucket",
                 "X-RateLimit-Scope": "global" if failure.is_global else "user"})
        messages = {403: "Missing Permissions", 404: "Unknown Channel"}
        codes = {403: 50013, 404: 10003}
        return _json({"message": messages.get(failure.status, "Error"),
                      "code": failure.code or codes.get(failure.status, 0)}, failure.status)


def _too_long() -> web.Response:
    return _json({"message": "Invalid Form Body", "code": 50035, "errors": {
        "content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                                 "message": "Must be 2000 or fewer in length."}]}}}, 400)


def _timestamp() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class DiscordWorld:
    """A server with #general, two people and a bot neighbour: what most scenarios need."""

    fake: FakeDiscord
    guild: FakeGuild
    general: str
    ada: FakeUser
    bob: FakeUser
    other_bot: FakeUser

    @classmethod
    def build(cls, fake: FakeDiscord) -> DiscordWorld:
        guild = fake.add_guild(name="Lab")
        general = fake.add_text_channel(guild, name="general")
        ada = fake.add_user("ada", global_name="Ada Lovelace")
        bob = fake.add_user("bob")
        other_bot = fake.add_user("otherbot", bot=True)
        fake.add_member(guild, ada, nick="Ada")
        fake.add_member(guild, bob)
        fake.add_member(guild, other_bot)
        return cls(fake, guild, general, ada, bob, other_bot)


@contextlib.asynccontextmanager
async def started_channel(fake: FakeDiscord, events: ChannelEvents,
                          **options: Any) -> AsyncIterator[DiscordChannel]:
    """A DiscordChannel pointed at `fake`, started with `events`, stopped afterwards."""
    options = {"token": fake.token, "api_base_url": fake.api_base_url,
               "gateway_url": fake.gateway_url, "guild_ready_timeout": 0.02, **options}
    channel = DiscordChannel(**options)
    await channel.start(events)
    try:
        yield channel
    finally:
        await channel.stop()
