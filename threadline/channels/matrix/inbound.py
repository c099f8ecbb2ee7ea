"""Turning a Matrix room event into Threadline's normalized inbound turn.

Ids (documented, stable; a Matrix id keeps its server, see `history.platform_ids`):
- conversation: `matrix:ROOM_ID` for the room's main timeline, `matrix:ROOM_ID:ROOT_EVENT_ID`
  for a thread (`m.thread` relation), e.g. `matrix:!abc:example.org:$root`;
- turn: `matrix:ROOM_ID:EVENT_ID`; event ids are unique, so a sync replayed after a restart
  maps to the same turn and the inbox drops it.

What a message addresses goes to `metadata.mentions`: the user ids of `m.mentions`, the user
ids and link texts of pills in `formatted_body` (`<a href="https://matrix.to/#/@bob:x">Bob</a>`),
and the bot's aliases when either names the bot. `@name` written in the body is read by the
core like on every platform. A reply (`m.in_reply_to`) outside a thread's fallback names the
message it answers; its author is not in the event, so `reply_to_participant_id` is left to
routing, which remembers who wrote each of our messages.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote, unquote

from threadline.channels.base import BotIdentity
from threadline.channels.fetch_policy import FileHosts, fetch_file
from threadline.channels.files import IncomingFile
from threadline.errors import InvalidMessageError
from threadline.history.model import MessageMetadata, Participant, Scope, StoredMessage

_MATRIX_TO = re.compile(r"^https://matrix\.to/#/(@[^/?]+)")
_MXC = re.compile(r"^mxc://([A-Za-z0-9.\-:\[\]]+)/([A-Za-z0-9_-]+)$")
_MEDIA_TYPES = frozenset({"m.image", "m.file", "m.audio", "m.video"})
# An event id as the spec allows it (`$` and at most 255 bytes); a thread root that is not one
# is no thread (it would become part of a conversation id).
_EVENT_ID = re.compile(r"^\$[!-9;-~]{1,200}(?::[A-Za-z0-9.\-]{1,200}(?::\d{1,5})?)?$")
MAX_MENTIONS = 50  # more than this in one message is not an address, it is noise


@dataclass(frozen=True, slots=True)
class Room:
    """What a turn needs to know of its room: its id, name, and whether it is a DM."""

    room_id: str
    name: str | None
    is_direct: bool


@dataclass(frozen=True, slots=True)
class Relation:
    """Where a message sits: its thread root (None: the main timeline) and what it replies to."""

    thread_root: str | None
    reply_to: str | None


def conversation_id(room_id: str, thread_root: str | None) -> str:
    """The documented conversation id of a room's timeline or of one of its threads."""
    return f"matrix:{room_id}:{thread_root}" if thread_root else f"matrix:{room_id}"


def turn_id(room_id: str, event_id: str) -> str:
    """The stored id of a Matrix event: the same for every sync that carries it."""
    return f"matrix:{room_id}:{event_id}"


def relation_of(content: Mapping[str, Any]) -> Relation:
    """The thread and the replied-to event of a message's `m.relates_to`."""
    relates = content.get("m.relates_to")
    if not isinstance(relates, Mapping):
        return Relation(None, None)
    in_reply = relates.get("m.in_reply_to")
    reply_to = in_reply.get("event_id") if isinstance(in_reply, Mapping) else None
    root = relates.get("event_id")
    if relates.get("rel_type") == "m.thread" and isinstance(root, str) and _EVENT_ID.match(root):
        # A thread message's reply to the thread's latest event is only a fallback.
        fallback = relates.get("is_falling_back") is True
        return Relation(root, None if fallback else _text_or_none(reply_to))
    return Relation(None, _text_or_none(reply_to))


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and _EVENT_ID.match(value) else None


class _Pills(HTMLParser):
    """The `(user id, link text)` of every matrix.to user link in an HTML body."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self._open: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = (dict(attrs).get("href") or "") if tag == "a" else ""
        match = _MATRIX_TO.match(href)
        if match:
            self._open, self._text = unquote(match.group(1)), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append((self._open, "".join(self._text).strip()))
            self._open = None


def mentions(content: Mapping[str, Any], bot: BotIdentity) -> tuple[str, ...]:
    """The ids and names a message addresses (see the module docstring)."""
    found: list[str] = []
    declared = content.get("m.mentions")
    if isinstance(declared, Mapping) and isinstance(declared.get("user_ids"), list):
        found += [u for u in declared["user_ids"] if isinstance(u, str)]
    formatted = content.get("formatted_body")
    if isinstance(formatted, str) and "matrix.to" in formatted:
        pills = _Pills()
        pills.feed(formatted)
        for user_id, name in pills.found:
            found += [user_id, *([name] if name else [])]
    found = found[:MAX_MENTIONS]
    if bot.user_id in found:
        found += bot.aliases
    return tuple(dict.fromkeys(found))


def media_url(homeserver: str, mxc: str) -> str:
    """The authenticated media download URL of an `mxc://server/media` URI on `homeserver`;
    `InvalidMessageError` for anything else (a path, another scheme, `..`)."""
    match = _MXC.match(mxc)
    if match is None:
        raise InvalidMessageError(f"{mxc!r} is not an mxc://SERVER/MEDIA_ID content URI; "
                                  "the file was not fetched")
    server, media = match.groups()
    return (f"{homeserver.rstrip('/')}/_matrix/client/v1/media/download/"
            f"{quote(server, safe='')}/{quote(media, safe='')}")


def incoming_files(content: Mapping[str, Any], *, homeserver: str, token: str,
                   hosts: FileHosts) -> list[IncomingFile]:
    """The file an `m.image` / `m.file` / `m.audio` / `m.video` message carries, fetched from
    the homeserver's media API (with the bot's token, to that host only) when taken in."""
    if content.get("msgtype") not in _MEDIA_TYPES or not isinstance(content.get("url"), str):
        return []
    url = media_url(homeserver, content["url"])
    info = content.get("info") if isinstance(content.get("info"), Mapping) else {}
    size = info.get("size") if isinstance(info, Mapping) else None
    name = content.get("filename") or content.get("body") or "file"

    async def fetch(limit: int) -> bytes:
        return await fetch_file(url, hosts=hosts, limit=limit,
                                credential={"Authorization": f"Bearer {token}"})

    fetcher: Callable[[int], Awaitable[bytes]] = fetch
    return [IncomingFile(name=str(name)[:200], platform_id=content["url"],
                         declared_size=size if isinstance(size, int) and size > 0 else 0,
                         fetch=fetcher)]


def text_of(content: Mapping[str, Any]) -> str:
    """A message's plain text; a media message's `body` is its file name, not words."""
    if content.get("msgtype") in _MEDIA_TYPES:
        caption = content.get("body") if content.get("filename") else None
        return caption if isinstance(caption, str) else ""
    body = content.get("body")
    return body if isinstance(body, str) else ""


def inbound_turn(event: Mapping[str, Any], *, room: Room, sender_name: str,
                 bot: BotIdentity, is_bot: bool = False) -> StoredMessage | None:
    """The normalized turn of a new `m.room.message`, or None when it has neither text nor a
    file (its file's text is added when it is taken in)."""
    content = event.get("content")
    if not isinstance(content, Mapping):
        return None
    text = text_of(content)
    if not text and content.get("msgtype") not in _MEDIA_TYPES:
        return None
    relation = relation_of(content)
    scope: Scope = ("dm" if room.is_direct else "thread" if relation.thread_root
                    else "channel")
    sent_at = event.get("origin_server_ts")
    return StoredMessage(
        conversation_id=conversation_id(room.room_id, relation.thread_root),
        participant=Participant(kind="user", id=str(event["sender"]),
                                display_name=sender_name),
        content=text,
        id=turn_id(room.room_id, str(event["event_id"])),
        timestamp=(datetime.fromtimestamp(sent_at / 1000, UTC)
                   if isinstance(sent_at, int) else datetime.now(UTC)),
        scope=scope,
        metadata=MessageMetadata(
            channel_type="matrix",
            channel_name=room.name,
            channel_id=room.room_id,
            thread_id=relation.thread_root,
            message_id=str(event["event_id"]),
            mentions=mentions(content, bot),
            reply_to_message_id=relation.reply_to,
            extra={"is_bot": True} if is_bot else {},
        ),
    )


def command_turn(event: Mapping[str, Any], *, room: Room, sender_name: str, command: str,
                 thread_root: str | None) -> StoredMessage:
    """A reaction that chose one of the bot's choices: the choice's command said by whoever
    reacted, where the choices were posted. The reaction's event id names the turn."""
    return StoredMessage(
        conversation_id=conversation_id(room.room_id, thread_root),
        participant=Participant(kind="user", id=str(event["sender"]), display_name=sender_name),
        content=command,
        id=turn_id(room.room_id, str(event["event_id"])),
        scope="dm" if room.is_direct else "thread" if thread_root else "channel",
        metadata=MessageMetadata(
            channel_type="matrix", channel_name=room.name, channel_id=room.room_id,
            thread_id=thread_root, extra={"reaction_to": _reacted_to(event)}),
    )


def _reacted_to(event: Mapping[str, Any]) -> str:
    relates = event.get("content", {}).get("m.relates_to", {})
    return str(relates.get("event_id", ""))
