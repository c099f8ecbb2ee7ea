"""Where a channel that was away picks up: the newest turn said in each recent conversation.

Discord's gateway sends an event only to the session connected when it happens, and a new
session is never sent it again: what was said while no process listened, and what reached a
process killed before it recorded it, would never be answered. On each new session such a
channel asks the receiver for `last_heard` (`ChannelEvents.last_heard`, read here from the
store), reads each of those conversations' platform history after that turn, and hands over
what it finds as it hands over events; the receiver drops what it already has by turn id.
"""

from __future__ import annotations

from datetime import datetime

from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore

# How many of the most recently active conversations are looked at, and how many of each
# one's newest turns are searched for a person's: a restart's catch-up stays a bounded read.
SCANNED_CONVERSATIONS = 500
SCANNED_TURNS = 20


async def last_heard(store: ConversationStore, *, prefix: str, since: datetime,
                     before: datetime | None) -> list[StoredMessage]:
    """The newest turn a person said (before `before`, when given), with its platform id, in
    each conversation whose id starts with `prefix` and that was active since `since`; most
    recently active first. `before` is when the first message the new session was sent
    live was said: what that session is sent is stored meanwhile, and must not move the
    place to read from past what it missed."""
    heard = []
    for info in await store.list_conversations(limit=SCANNED_CONVERSATIONS):
        if info.last_activity < since or not info.conversation_id.startswith(prefix):
            continue
        turns = await store.get(info.conversation_id, before=before, limit=SCANNED_TURNS)
        newest = next((turn for turn in reversed(turns) if turn.participant.kind == "user"
                       and turn.metadata.message_id is not None), None)
        if newest is not None:
            heard.append(newest)
    return heard
