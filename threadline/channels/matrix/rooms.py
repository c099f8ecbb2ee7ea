"""The rooms the bot is in, and what the homeserver knows of them, asked once and kept.

Invites are accepted here (from the people and servers `auto_join` names), once per room.

The channel reads `/sync` as plain JSON (`matrix.sync`), so nio's own room state is not kept;
what a turn needs is asked for here when first needed: a room's name and member count (a room
of two is a DM) with the members' display names, a person's display name, and an earlier event
(an edit's or a redaction's original, the post a reaction chose on). A membership change in a
room forgets what was known of it and of that member.

Events this process delivered are remembered with their conversation and sender (the last
10,000), so an edit or a redaction is placed without asking; an older one is read from the
homeserver. A redacted event has lost its content, thread included: it is placed in its room's
main timeline.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nio import (
    AsyncClient,
    ErrorResponse,
    JoinedMembersResponse,
    RoomGetEventResponse,
    RoomGetStateEventResponse,
)

from threadline.channels.matrix.inbound import Room, conversation_id, relation_of

_REMEMBERED_EVENTS = 10_000


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an earlier event was said, and by whom (None: the homeserver does not say)."""

    conversation_id: str
    sender: str | None


class RoomDirectory:
    """Rooms, names and earlier events of one account (see the module docstring)."""

    def __init__(self, client: AsyncClient, *, joined: Iterable[str], log: Any) -> None:
        self._client = client
        self._log = log
        self._joined = set(joined)
        self._rooms: dict[str, Room] = {}
        self._names: dict[str, str] = {}
        self._seen: OrderedDict[str, Origin] = OrderedDict()

    async def invited(self, room_id: str, invite_state: Sequence[Mapping[str, Any]], *,
                      me: str, auto_join: Sequence[str], setting: str) -> None:
        """Join a room we were invited to when its inviter, or the inviter's server, is in
        `auto_join` (or it holds `*`). The invite shows again after joining: a room joined
        already is left alone."""
        if room_id in self._joined:
            return
        inviter = next((e.get("sender") for e in invite_state
                        if e.get("type") == "m.room.member" and e.get("state_key") == me), None)
        if not isinstance(inviter, str) or not any(
                entry in (inviter, inviter.partition(":")[2], "*") for entry in auto_join):
            self._log.info("matrix.invite_ignored", room_id=room_id, inviter=inviter,
                           outcome=f"not joined; add the inviter or its server to {setting}")
            return
        joined = await self._client.join(room_id)
        if isinstance(joined, ErrorResponse):
            self._log.warning("matrix.join_failed", room_id=room_id, error=str(joined))
            return
        self._joined.add(room_id)
        self._log.info("matrix.joined", room_id=room_id, inviter=inviter)

    def membership_changed(self, room_id: str, user_id: object) -> None:
        self._rooms.pop(room_id, None)
        self._names.pop(str(user_id), None)

    def remember(self, event_id: str, origin: Origin) -> None:
        self._seen[event_id] = origin
        while len(self._seen) > _REMEMBERED_EVENTS:
            self._seen.popitem(last=False)

    async def origin(self, room_id: str, event_id: str) -> Origin:
        """Where an event was said: as delivered here, else as the homeserver has it."""
        if event_id in self._seen:
            return self._seen[event_id]
        event = await self.event(room_id, event_id) or {}
        thread = relation_of(event.get("content") or {}).thread_root
        sender = event.get("sender")
        return Origin(conversation_id(room_id, thread),
                      sender if isinstance(sender, str) else None)

    async def event(self, room_id: str, event_id: str) -> Mapping[str, Any] | None:
        """One event of a room as the homeserver has it (None when it does not answer)."""
        found = await self._client.room_get_event(room_id, event_id)
        if not isinstance(found, RoomGetEventResponse):
            self._log.info("matrix.event_not_read", room_id=room_id, event_id=event_id,
                           error=str(found))
            return None
        source = getattr(found.event, "source", None)
        return source if isinstance(source, Mapping) else None

    async def room(self, room_id: str) -> Room:
        """The room's name and whether it is a DM (two members)."""
        if room_id in self._rooms:
            return self._rooms[room_id]
        members = await self._client.joined_members(room_id)
        count = 0
        if isinstance(members, JoinedMembersResponse):
            count = len(members.members)
            self._names.update({m.user_id: m.display_name for m in members.members
                                if m.display_name})
        named = await self._client.room_get_state_event(room_id, "m.room.name")
        name = (named.content.get("name") if isinstance(named, RoomGetStateEventResponse)
                else None)
        self._rooms[room_id] = Room(room_id=room_id, is_direct=count == 2,
                                    name=name if isinstance(name, str) and name else None)
        return self._rooms[room_id]

    async def name_of(self, user_id: str) -> str:
        """A person's display name (their localpart when they set none)."""
        if user_id not in self._names:
            self._names[user_id] = await display_name(self._client, user_id)
        return self._names[user_id]


async def display_name(client: AsyncClient, user_id: str) -> str:
    """The profile's display name of `user_id`, or its localpart."""
    answer = await client.get_displayname(user_id)
    name = getattr(answer, "displayname", None)
    return name if isinstance(name, str) and name else user_id.partition(":")[0][1:]
