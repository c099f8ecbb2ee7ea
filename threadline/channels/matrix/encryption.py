"""Encrypted rooms are refused, in words: this channel keeps no end-to-end keys.

Reading an encrypted room needs the account's device keys and every room's session keys kept
across restarts and shared by replicas (in the backend), with devices verified; none of that
is done, so `check` names each encrypted room the bot is in, and the first encrypted message
of a room is answered, in that room (a plain notice, which every client shows), with why the
bot cannot read it. Later ones are only logged.
"""

from __future__ import annotations

import hashlib
from typing import Any

from nio import AsyncClient, ErrorResponse, RoomGetStateEventResponse

ENCRYPTED_REFUSAL = (
    "This room is end-to-end encrypted, and this bot keeps no encryption keys, so it cannot "
    "read what is said here. Talk to it in a room without encryption.")


async def encryption_problem(client: AsyncClient, room_id: str, *, where: str) -> str | None:
    """What `check` says of a room that is encrypted (None for one that is not)."""
    state = await client.room_get_state_event(room_id, "m.room.encryption")
    if isinstance(state, RoomGetStateEventResponse) and state.content.get("algorithm"):
        return (f"{where}: room {room_id} is end-to-end encrypted; this channel keeps no "
                "encryption keys and cannot read it (its messages are refused). Use a room "
                "without encryption, or leave that room.")
    return None


class EncryptedRooms:
    """Says once per room, in the room, that its encrypted messages cannot be read."""

    def __init__(self, *, log: Any) -> None:
        self._log = log
        self._told: set[str] = set()

    async def refuse(self, client: AsyncClient, room_id: str) -> None:
        self._log.warning("matrix.encrypted_event_refused", room_id=room_id,
                          outcome="not read: this channel keeps no encryption keys")
        if room_id in self._told:
            return
        self._told.add(room_id)
        # The same transaction id for the room: a notice retried is the same event.
        sent = await client.room_send(
            room_id, "m.room.message", {"msgtype": "m.notice", "body": ENCRYPTED_REFUSAL,
                                        "m.mentions": {}},
            tx_id="tl-encrypted-" + hashlib.sha256(room_id.encode()).hexdigest()[:24])
        if isinstance(sent, ErrorResponse):
            self._log.warning("matrix.refusal_not_posted", room_id=room_id, error=str(sent))
