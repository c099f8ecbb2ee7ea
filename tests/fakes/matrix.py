"""A fake Matrix homeserver: real HTTP on 127.0.0.1, the client-server API's own wire format.

It serves what a bot uses (`/_matrix/client/v3/...`: `account/whoami`, `sync` as a long poll,
`rooms/{room}/send/{type}/{txn}` idempotent per transaction id as the spec says, `typing`,
`join/{room}`, `joined_rooms`, `joined_members`, `state/{type}`, `profile/{user}/displayname`,
and authenticated media at `/_matrix/client/v1/media/download/{server}/{media}`), refuses a
missing or wrong access token with 401 `M_MISSING_TOKEN` / `M_UNKNOWN_TOKEN`, and records every
request in `calls`. Events are one log: `sync` with `since=N` hands out the events after
position N (and waits up to `timeout` ms for one), `next_batch` is the last position; a sync
without `since` hands out every joined room's whole timeline, as an initial sync does. What
the bot sends comes back in its own sync, as on a real server; once it joins a room it was
invited to, the next sync shows the invite again (Synapse does so). `fail(kind, ...)` makes the
next requests of one kind answer an error.

    async with FakeMatrix() as fake:
        room = fake.add_room("Support", members=[ALICE])
        event = fake.message(room, ALICE, "@billing was I charged twice?")
        [sent] = await fake.wait_for_sent(1)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

TOKEN = "syt_fake_access_token"
SERVER = "fake.test"
BOT = "@support:fake.test"
ALICE = "@alice:fake.test"
BOB = "@bob:fake.test"
_V3 = "/_matrix/client/v3"


@dataclass(frozen=True)
class ApiCall:
    """One request the fake received: its kind (`send`, `sync`, ...), path, query and body."""

    kind: str
    path: str
    query: dict[str, str]
    body: dict[str, Any]
    status: int
    at: float = 0.0


@dataclass
class FakeRoom:
    room_id: str
    name: str
    members: list[str]
    encrypted: bool = False
    joined: bool = True  # whether the bot is in it


@dataclass
class _Entry:
    position: int
    room_id: str
    event: dict[str, Any]
    section: str = "join"  # "invite": an invite of the bot (stripped state)


@dataclass
class Sent:
    """An event the bot sent: where, its type, its content and the id the server gave it."""

    room_id: str
    type: str
    content: dict[str, Any]
    event_id: str
    txn_id: str


@dataclass
class _Failure:
    status: int
    errcode: str
    error: str
    extra: dict[str, Any] = field(default_factory=dict)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def pill(user_id: str, name: str) -> str:
    """A mention as Element writes it in `formatted_body`."""
    return f'<a href="https://matrix.to/#/{user_id}">{name}</a>'


class FakeMatrix:
    """The fake homeserver; see the module docstring."""

    def __init__(self, *, token: str = TOKEN, bot: str = BOT,
                 display_names: dict[str, str] | None = None) -> None:
        self.token = token
        self.bot = bot
        self.display_names = {BOT: "Support", ALICE: "Alice", BOB: "Bob",
                              **(display_names or {})}
        self.calls: list[ApiCall] = []
        self.sent: list[Sent] = []
        self.typing: list[tuple[str, bool]] = []
        self.rooms: dict[str, FakeRoom] = {}
        self.sync_requests: list[str | None] = []  # each /sync's `since`, as it arrived
        self.messages_pages = 0  # /messages pages served (a limited timeline's gap)
        self.media: dict[str, tuple[bytes, str]] = {}  # media id -> (bytes, content type)
        self.uploads: list[tuple[str, bytes]] = []  # (file name, bytes) the bot uploaded
        self.whoami_answers = True
        self._log: list[_Entry] = []
        self._txns: dict[tuple[str, str], str] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._failures: dict[str, deque[_Failure]] = defaultdict(deque)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/_matrix/{path:.+}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- building the world -----------------------------------------------------------------

    def add_room(self, name: str, *, members: list[str], encrypted: bool = False,
                 joined: bool = True) -> str:
        room_id = f"!{name.lower().replace(' ', '')}{next(self._ids)}:{SERVER}"
        self.rooms[room_id] = FakeRoom(room_id, name, [self.bot, *members] if joined
                                       else list(members), encrypted=encrypted, joined=joined)
        return room_id

    def _event(self, room_id: str, sender: str, type_: str, content: dict[str, Any],
               **fields: Any) -> dict[str, Any]:
        event = {"type": type_, "event_id": f"$ev{next(self._ids)}", "sender": sender,
                 "origin_server_ts": int(time.time() * 1000), "content": content,
                 "unsigned": {}, **fields}
        self._append(room_id, event)
        return event

    def _append(self, room_id: str, event: dict[str, Any], section: str = "join") -> None:
        self._log.append(_Entry(len(self._log) + 1, room_id, event, section))
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def message(self, room_id: str, sender: str, body: str, *, thread: str | None = None,
                mentions: list[str] | None = None, formatted: str | None = None,
                reply_to: str | None = None, msgtype: str = "m.text") -> dict[str, Any]:
        """A text message; `thread` is the thread root's event id, `mentions` `m.mentions`."""
        content: dict[str, Any] = {"msgtype": msgtype, "body": body}
        if formatted is not None:
            content |= {"format": "org.matrix.custom.html", "formatted_body": formatted}
        if mentions is not None:
            content["m.mentions"] = {"user_ids": mentions}
        if thread is not None:
            content["m.relates_to"] = {"rel_type": "m.thread", "event_id": thread,
                                       "is_falling_back": True,
                                       "m.in_reply_to": {"event_id": reply_to or thread}}
        elif reply_to is not None:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
        return self._event(room_id, sender, "m.room.message", content)

    def edit(self, room_id: str, original: dict[str, Any], body: str, *,
             sender: str | None = None) -> dict[str, Any]:
        """An `m.replace` of `original`, by its author unless `sender` says otherwise."""
        return self._event(room_id, sender or original["sender"], "m.room.message", {
            "msgtype": "m.text", "body": f"* {body}",
            "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": original["event_id"]}})

    def redact(self, room_id: str, original: dict[str, Any]) -> dict[str, Any]:
        """The original loses its content (relations too), as the redaction algorithm says."""
        for entry in self._log:
            if entry.event.get("event_id") == original["event_id"]:
                entry.event = {**entry.event, "content": {}}
        return self._event(room_id, original["sender"], "m.room.redaction", {},
                           redacts=original["event_id"])

    def react(self, room_id: str, target_event_id: str, sender: str, key: str
              ) -> dict[str, Any]:
        return self._event(room_id, sender, "m.reaction", {"m.relates_to": {
            "rel_type": "m.annotation", "event_id": target_event_id, "key": key}})

    def encrypted(self, room_id: str, sender: str) -> dict[str, Any]:
        return self._event(room_id, sender, "m.room.encrypted", {
            "algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAC", "device_id": "D",
            "sender_key": "k", "session_id": "s"})

    def file(self, room_id: str, sender: str, data: bytes, *, name: str, mimetype: str,
             msgtype: str = "m.file", declared_size: int | None = None) -> dict[str, Any]:
        media_id = f"media{next(self._ids)}"
        self.media[media_id] = (data, mimetype)
        return self._event(room_id, sender, "m.room.message", {
            "msgtype": msgtype, "body": name, "url": f"mxc://{SERVER}/{media_id}",
            "info": {"mimetype": mimetype, "size": declared_size or len(data)}})

    def raw(self, room_id: str, event: dict[str, Any]) -> None:
        """Any event as given, malformed or not."""
        self._append(room_id, event)

    def invite(self, room_id: str, inviter: str) -> None:
        """`inviter` invites the bot into `room_id` (which it has not joined)."""
        room = self.rooms[room_id]
        self._append(room_id, {"type": "m.room.member", "state_key": self.bot,
                               "sender": inviter, "content": {"membership": "invite"}},
                     "invite")
        room.joined = False

    def fail(self, kind: str, *, status: int, errcode: str, error: str = "refused",
             times: int = 1, **extra: Any) -> None:
        for _ in range(times):
            self._failures[kind].append(_Failure(status, errcode, error, extra))

    # -- what the test sees ---------------------------------------------------------------

    def calls_of(self, kind: str) -> list[ApiCall]:
        return [c for c in self.calls if c.kind == kind]

    def messages_sent(self) -> list[Sent]:
        return [s for s in self.sent if s.type == "m.room.message"]

    async def wait_for_sent(self, count: int, *, within: float = 10.0) -> list[Sent]:
        """The first `count` messages the bot sent, waiting for them."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.messages_sent()) >= count)
        return self.messages_sent()[:count]

    async def wait_until(self, condition: Callable[[], bool], *, within: float = 10.0) -> None:
        """Wait until `condition()` holds, checked whenever a request was answered."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(condition)

    async def wait_for_sync_past(self, position: int, *, within: float = 10.0) -> None:
        """Wait until the bot synced from `position` or later (it took what came before)."""
        def past() -> bool:
            return any(int(since or 0) >= position for since in self.sync_requests)
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(past)

    @property
    def position(self) -> int:
        return len(self._log)

    # -- the API ----------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        path = request.path
        kind = _kind(path)
        body: dict[str, Any] = {}
        raw = await request.read() if kind == "upload" else b""
        if request.can_read_body and kind not in ("download", "upload"):
            try:
                body = json.loads(await request.read() or b"{}")
            except ValueError:
                return self._record(request, kind, body, _json(
                    {"errcode": "M_NOT_JSON", "error": "not JSON"}, 400))
        auth = request.headers.get("Authorization", "")
        if not auth:
            return self._record(request, kind, body, _json(
                {"errcode": "M_MISSING_TOKEN", "error": "Missing access token"}, 401))
        if auth != f"Bearer {self.token}":
            return self._record(request, kind, body, _json(
                {"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token"}, 401))
        if self._failures[kind]:
            failure = self._failures[kind].popleft()
            return self._record(request, kind, body, _json(
                {"errcode": failure.errcode, "error": failure.error, **failure.extra},
                failure.status))
        if kind == "upload":
            body = {"bytes": raw}
        answer = await getattr(self, f"_api_{kind}")(request, body)
        return self._record(request, kind, body, answer)

    def _record(self, request: web.Request, kind: str, body: dict[str, Any],
                response: web.Response) -> web.Response:
        self.calls.append(ApiCall(kind, request.path, dict(request.query), body,
                                  response.status, time.monotonic()))
        asyncio.get_running_loop().create_task(self._notify())
        return response

    async def _api_whoami(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        if not self.whoami_answers:
            return _json({"errcode": "M_UNKNOWN", "error": "whoami is down"}, 500)
        return _json({"user_id": self.bot, "device_id": "FAKEDEVICE", "is_guest": False})

    async def _api_sync(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        since = request.query.get("since")
        self.sync_requests.append(since)
        await self._notify()
        wait = int(request.query.get("timeout", "0") or 0) / 1000
        after = int(since) if since and since.isdigit() else 0
        if since and wait:
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait_for(
                        lambda: self.position > after), wait)
        entries = self._log[after:] if since else [
            e for e in self._log if e.section == "join" and self.rooms[e.room_id].joined]
        limit = _timeline_limit(request.query.get("filter"))
        join: dict[str, Any] = {}
        invite: dict[str, Any] = {}
        timelines: dict[str, list[_Entry]] = defaultdict(list)
        for entry in entries:
            if entry.section == "invite":
                invite.setdefault(entry.room_id, {"invite_state": {"events": []}})[
                    "invite_state"]["events"].append(entry.event)
            elif self.rooms[entry.room_id].joined:
                timelines[entry.room_id].append(entry)
        for room_id, timeline in timelines.items():
            kept = timeline[-limit:]  # more than the limit: the newest, and `limited`
            join[room_id] = {"state": {"events": []}, "timeline": {
                "events": [e.event for e in kept], "limited": len(kept) < len(timeline),
                "prev_batch": str(kept[0].position - 1)}}
        return _json({"next_batch": str(self.position),
                      "rooms": {"join": join, "invite": invite, "leave": {}}})

    async def _api_send(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        parts = request.path.split("/")
        room_id, type_, txn = parts[-4], parts[-2], parts[-1]
        known = self._txns.get((room_id, txn))
        if known is not None:  # the same transaction again: the same event, sent once
            return _json({"event_id": known})
        room = self.rooms.get(room_id)
        if room is None or not room.joined:
            return _json({"errcode": "M_FORBIDDEN", "error": "not in the room"}, 403)
        event = self._event(room_id, self.bot, type_, body)
        self._txns[(room_id, txn)] = event["event_id"]
        self.sent.append(Sent(room_id, type_, body, event["event_id"], txn))
        return _json({"event_id": event["event_id"]})

    async def _api_typing(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        self.typing.append((request.path.split("/")[-3], bool(body.get("typing"))))
        return _json({})

    async def _api_join(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        room_id = request.path.split("/")[-1]
        room = self.rooms.get(room_id)
        if room is None:
            return _json({"errcode": "M_NOT_FOUND", "error": "no such room"}, 404)
        if not room.joined:
            room.joined = True
            room.members.append(self.bot)
            self._event(room_id, self.bot, "m.room.member", {"membership": "join"},
                        state_key=self.bot)
            # The invite comes again in the next sync (as Synapse sends it).
            invites = [e for e in self._log if e.section == "invite" and e.room_id == room_id]
            if invites:
                self._append(room_id, invites[-1].event, "invite")
        return _json({"room_id": room_id})

    async def _api_joined_rooms(self, request: web.Request, body: dict[str, Any]
                                ) -> web.Response:
        return _json({"joined_rooms": [r for r, room in self.rooms.items() if room.joined]})

    async def _api_joined_members(self, request: web.Request, body: dict[str, Any]
                                  ) -> web.Response:
        room = self.rooms[request.path.split("/")[-2]]
        return _json({"joined": {m: {"display_name": self.display_names.get(m)}
                                 for m in room.members}})

    async def _api_state(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        parts = request.path.rstrip("/").split("/")
        room = self.rooms.get(parts[parts.index("rooms") + 1])
        if room is not None and parts[-1] == "m.room.encryption" and room.encrypted:
            return _json({"algorithm": "m.megolm.v1.aes-sha2"})
        if room is not None and parts[-1] == "m.room.name":
            return _json({"name": room.name})
        return _json({"errcode": "M_NOT_FOUND", "error": "Event not found."}, 404)

    async def _api_event(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        parts = request.path.split("/")
        room_id, event_id = parts[-3], parts[-1]
        for entry in self._log:
            if entry.room_id == room_id and entry.event.get("event_id") == event_id:
                return _json({**entry.event, "room_id": room_id})
        return _json({"errcode": "M_NOT_FOUND", "error": "Event not found."}, 404)

    async def _api_messages(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        """`dir=b` pages from `from` (a position, included) back to `to` (excluded)."""
        room_id = request.path.split("/")[-2]
        start, stop = int(request.query["from"]), int(request.query.get("to") or 0)
        limit = int(request.query.get("limit", "10"))
        older = [e for e in reversed(self._log[:start]) if e.room_id == room_id
                 and e.section == "join" and e.position > stop]
        page = older[:limit]
        answer: dict[str, Any] = {"chunk": [e.event for e in page], "start": str(start)}
        if len(older) > limit:
            answer["end"] = str(page[-1].position - 1)
        self.messages_pages += 1
        return _json(answer)

    async def _api_profile(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        user = request.path.split("/")[-2]
        name = self.display_names.get(user)
        if name is None:
            return _json({"errcode": "M_NOT_FOUND", "error": "Profile not found"}, 404)
        return _json({"displayname": name})

    async def _api_download(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        media_id = request.path.split("/")[-1]
        found = self.media.get(media_id)
        if found is None:
            return _json({"errcode": "M_NOT_FOUND", "error": "no such media"}, 404)
        return web.Response(body=found[0], content_type=found[1])

    async def _api_upload(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        media_id = f"media{next(self._ids)}"
        self.media[media_id] = (body["bytes"], request.content_type)
        self.uploads.append((request.query.get("filename", ""), body["bytes"]))
        return _json({"content_uri": f"mxc://{SERVER}/{media_id}"})

    async def _api_unknown(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        return _json({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"}, 404)


def _timeline_limit(filter_json: str | None) -> int:
    """The timeline limit of a sync's inline filter; 10, Synapse's default, without one."""
    try:
        limit = json.loads(filter_json or "{}")["room"]["timeline"]["limit"]
    except (ValueError, KeyError, TypeError):
        return 10
    return int(limit) if isinstance(limit, int) and limit > 0 else 10


def _kind(path: str) -> str:
    """Which API a path is: the names `fail` and `calls_of` take."""
    if path.startswith("/_matrix/client/v1/media/download/"):
        return "download"
    if path == "/_matrix/media/v3/upload":
        return "upload"
    rest = path.removeprefix(_V3 + "/").split("/")
    if rest[0] == "rooms" and len(rest) > 2:
        return {"send": "send", "typing": "typing", "joined_members": "joined_members",
                "state": "state", "event": "event",
                "messages": "messages"}.get(rest[2], "unknown")
    if rest[0] == "account" and rest[-1] == "whoami":
        return "whoami"
    if rest[0] == "profile":
        return "profile"
    return rest[0] if rest[0] in ("sync", "join", "joined_rooms") else "unknown"

