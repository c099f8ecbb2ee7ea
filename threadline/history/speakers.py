"""Who said a turn, as a platform identity, and the index keys person memory searches by.

A person's words are found again through two single-token keys stored with each user turn:

- `speaker_key`: the speaker's platform identity (`slack:T1:U7`, `telegram:456`,
  `discord:123`, `matrix:@alice:example.org`), hashed. A DM searches these: there the person
  may see all their own words.
- `speaker_space`: the identity together with where it was said: `dm` for a direct message,
  else the conversation's workspace (a Slack team, a Discord guild, a Telegram group). A group
  searches these for its own workspace only, so a DM never reaches a group and one workspace
  never reaches another.

Hashes make each key one exact token in a full-text index (ids such as `slack:T1:U7` would be
split into several), like `conversation_key`.
"""

from __future__ import annotations

import hashlib

from threadline.history.model import StoredMessage
from threadline.history.platform_ids import id_parts, platform_of

# Platforms whose user ids are unique only inside a workspace (a Slack team; an `http`
# channel, whose caller names its own users); elsewhere a user id names one account on the
# whole platform (Telegram and Discord user ids).
WORKSPACE_SCOPED_USERS = frozenset({"slack", "http"})
DM_SPACE = "dm"


def workspace_of(conversation_id: str) -> str:
    """The workspace a conversation id lies in: its first two parts.

    `slack:T1:C2:1700.1` -> `slack:T1` (the team), `discord:G9:C3` -> `discord:G9` (the
    guild), `telegram:-1001:5` -> `telegram:-1001` (the group, with its topics),
    `matrix:!r:example.org:$ev` -> `matrix:!r:example.org` (the room, with its threads).
    """
    parts = id_parts(conversation_id)
    return ":".join(parts[:2])


def identity_of(message: StoredMessage) -> str | None:
    """The platform identity of a turn's author, or None when no person wrote it."""
    return author_identity(message.conversation_id, message.participant.kind,
                           message.participant.id)


def author_identity(conversation_id: str, kind: str, participant_id: str) -> str | None:
    """`identity_of` from a turn's stored columns (the migration fills old rows with it)."""
    if kind != "user":
        return None
    platform = platform_of(conversation_id)
    if platform in WORKSPACE_SCOPED_USERS:
        return f"{workspace_of(conversation_id)}:{participant_id}"
    return f"{platform}:{participant_id}"


def space_of(conversation_id: str, scope: str) -> str:
    """Where a turn was said, as person memory sees it: `dm`, or the conversation's workspace."""
    return DM_SPACE if scope == "dm" else workspace_of(conversation_id)


def _token(prefix: str, text: str) -> str:
    return prefix + hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def speaker_key(identity: str) -> str:
    """The index token of every turn one identity wrote."""
    return _token("p", identity)


def speaker_space_key(identity: str, space: str) -> str:
    """The index token of the turns one identity wrote in one space (see `space_of`)."""
    return _token("s", f"{identity}\x1f{space}")


def speaker_keys(message: StoredMessage) -> tuple[str, str] | None:
    """(speaker_key, speaker_space) of a turn, or None for agents, the system and summaries."""
    return stored_speaker_keys(message.conversation_id, message.participant.kind,
                               message.participant.id, message.scope,
                               is_summary=message.metadata.is_summary)


def stored_speaker_keys(conversation_id: str, kind: str, participant_id: str, scope: str, *,
                        is_summary: bool) -> tuple[str, str] | None:
    """`speaker_keys` from a turn's stored columns."""
    identity = author_identity(conversation_id, kind, participant_id)
    if identity is None or is_summary:
        return None
    return speaker_key(identity), speaker_space_key(identity, space_of(conversation_id, scope))
