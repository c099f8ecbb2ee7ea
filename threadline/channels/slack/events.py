"""Slack events read as Threadline turns, edits and deletions; the one place for Slack markup.

Pure functions, no I/O: `classify` decides what a `message` event means, `to_stored_message`
builds the normalized turn once the channel has looked up display names, and
`render_mentions` / `escape_outgoing` are the only places that read or write Slack's `<...>`
markup.

Conversation ids: `slack:TEAM:CHANNEL` for a top-level message (channel or DM) and
`slack:TEAM:CHANNEL:THREAD_TS` for a reply inside a thread. A message's stored id is
`slack:TEAM:CHANNEL:TS`: `ts` is unique within a channel, and leaving the thread out means an
edit or deletion, whose payload may not say which thread it was in, still finds the turn's id.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from threadline.history.model import MessageMetadata, Participant, Scope, StoredMessage

CHANNEL_TYPE = "slack"

# Subtypes that are someone saying something; every other subtype (joins, topic changes,
# `message_replied` bookkeeping, ...) is not a turn.
_POST_SUBTYPES = frozenset({None, "thread_broadcast", "file_share", "me_message", "bot_message"})
_MARKUP = re.compile(r"<([@#!]?)([^>|]+)(?:\|([^>]*))?>")
_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
# Markup an agent may write on purpose (mentions, channel links, @here, links); kept as is.
_OUTGOING_MARKUP = re.compile(r"<(?:[@#!][^<>\s]+|(?:https?|mailto):[^<>\s]+)>")


@dataclass(frozen=True, slots=True)
class SlackPost:
    """A new message someone posted: everything needed to build its turn but display names."""

    conversation_id: str
    stored_id: str
    scope: Scope
    channel_id: str
    ts: str
    thread_ts: str | None
    author_id: str
    author_name: str | None
    is_bot: bool
    text: str
    parent_user_id: str | None


@dataclass(frozen=True, slots=True)
class SlackEdit:
    """A real text edit of an earlier message (not a link unfurl being attached)."""

    conversation_id: str
    stored_id: str
    text: str


@dataclass(frozen=True, slots=True)
class SlackDeletion:
    """A message that was deleted."""

    conversation_id: str
    stored_id: str


SlackChange = SlackPost | SlackEdit | SlackDeletion


def conversation_id(*, team_id: str, channel_id: str, ts: str, thread_ts: str | None) -> str:
    """The conversation a message with this `ts` / `thread_ts` belongs to."""
    channel = f"slack:{team_id}:{channel_id}"
    if thread_ts and thread_ts != ts:
        return thread_conversation_id(channel, thread_ts)
    return channel


def thread_conversation_id(channel_conversation_id: str, thread_ts: str) -> str:
    """The conversation of the thread under the post `thread_ts` in a channel's conversation."""
    return f"{channel_conversation_id}:{thread_ts}"


def stored_id(*, team_id: str, channel_id: str, ts: str) -> str:
    """The stored turn id of the Slack message `ts` in `channel_id`."""
    return f"slack:{team_id}:{channel_id}:{ts}"


def mentioned_user_ids(text: str) -> tuple[str, ...]:
    """The user ids `<@U...>` markup in `text` mentions, in order, once each."""
    found = (m.group(2) for m in _MARKUP.finditer(text) if m.group(1) == "@")
    return tuple(dict.fromkeys(i for i in found if _USER_ID.match(i)))


def names_to_look_up(post: SlackPost) -> tuple[str, ...]:
    """The user ids whose display names `post` needs: its author (if a user) and its mentions."""
    author = (post.author_id,) if _USER_ID.match(post.author_id) else ()
    return tuple(dict.fromkeys((*author, *mentioned_user_ids(post.text))))


def render_mentions(text: str, names: Mapping[str, str]) -> str:
    """Slack markup made readable: `<@U1>` -> `@Name`, `<#C1|general>` -> `#general`, ...

    `names` maps user ids to display names; an unknown id keeps the markup's own label or
    the id. Slack's HTML escapes (`&lt;`, `&gt;`, `&amp;`) are undone last.
    """

    def readable(match: re.Match[str]) -> str:
        sigil, target, label = match.group(1), match.group(2), match.group(3)
        if sigil == "@":
            return "@" + (names.get(target) or label or target)
        if sigil == "#":
            return "#" + (label or target)
        if sigil == "!":
            if label:  # subteams and dates carry their readable form as the label
                return label
            return "@" + target.split("^", 1)[0]
        return f"{label} ({target})" if label and label != target else target

    return html.unescape(_MARKUP.sub(readable, text)) if "<" in text or "&" in text else text


def escape_outgoing(text: str) -> str:
    """Escape `&`, `<`, `>` as Slack asks, leaving deliberate markup (`<@U1>`, links) intact."""
    pieces: list[str] = []
    position = 0
    for match in _OUTGOING_MARKUP.finditer(text):
        pieces.append(_escape(text[position:match.start()]))
        pieces.append(match.group(0))
        position = match.end()
    pieces.append(_escape(text[position:]))
    return "".join(pieces)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def classify(
    event: Mapping[str, Any], *, team_id: str, own_ids: frozenset[str], allow_bots: bool
) -> SlackChange | None:
    """What a `message` event means for the history, or None when it is not a turn.

    Dropped: the bot's own posts and edits (`own_ids` holds its user id and bot id), other
    bots' unless `allow_bots`, `message_changed` whose text did not change (Slack sends one
    when it attaches a link unfurl), and subtypes that are not someone speaking.
    """
    subtype = event.get("subtype")
    channel_id = str(event.get("channel", ""))
    if not channel_id:
        return None
    if subtype == "message_changed":
        return _edit(event, team_id=team_id, channel_id=channel_id, own_ids=own_ids,
                     allow_bots=allow_bots)
    if subtype == "message_deleted":
        return _deletion(event, team_id=team_id, channel_id=channel_id)
    if subtype not in _POST_SUBTYPES or not event.get("ts"):
        return None
    if _is_unwanted_author(event, own_ids=own_ids, allow_bots=allow_bots):
        return None
    ts = str(event["ts"])
    thread_ts = event.get("thread_ts")
    in_thread = bool(thread_ts) and thread_ts != ts
    author_id = str(event.get("user") or event.get("bot_id") or "")
    if not author_id:
        return None
    scope: Scope = "dm" if event.get("channel_type") == "im" else (
        "thread" if in_thread else "channel")
    bot_profile = event.get("bot_profile") or {}
    return SlackPost(
        conversation_id=conversation_id(team_id=team_id, channel_id=channel_id, ts=ts,
                                        thread_ts=thread_ts),
        stored_id=stored_id(team_id=team_id, channel_id=channel_id, ts=ts),
        scope=scope,
        channel_id=channel_id,
        ts=ts,
        thread_ts=str(thread_ts) if in_thread else None,
        author_id=author_id,
        author_name=event.get("username") or bot_profile.get("name"),
        is_bot=_is_bot(event),
        text=str(event.get("text") or ""),
        parent_user_id=event.get("parent_user_id") if in_thread else None,
    )


def _is_bot(event: Mapping[str, Any]) -> bool:
    return bool(event.get("bot_id")) or event.get("subtype") == "bot_message"


def _is_unwanted_author(
    event: Mapping[str, Any], *, own_ids: frozenset[str], allow_bots: bool
) -> bool:
    if event.get("user") in own_ids or event.get("bot_id") in own_ids:
        return True
    return _is_bot(event) and not allow_bots


def _edit(
    event: Mapping[str, Any], *, team_id: str, channel_id: str, own_ids: frozenset[str],
    allow_bots: bool,
) -> SlackEdit | None:
    message = event.get("message") or {}
    previous = event.get("previous_message")
    if not message.get("ts") or _is_unwanted_author(message, own_ids=own_ids,
                                                     allow_bots=allow_bots):
        return None
    text = str(message.get("text") or "")
    if previous is not None and previous.get("text", "") == text:
        return None  # an unfurl or attachment change: the words are the same
    if previous is None and "edited" not in message:
        return None
    ts = str(message["ts"])
    return SlackEdit(
        conversation_id=conversation_id(team_id=team_id, channel_id=channel_id, ts=ts,
                                        thread_ts=message.get("thread_ts")),
        stored_id=stored_id(team_id=team_id, channel_id=channel_id, ts=ts),
        text=text,
    )


def _deletion(event: Mapping[str, Any], *, team_id: str, channel_id: str) -> SlackDeletion | None:
    ts = event.get("deleted_ts")
    if not ts:
        return None
    # Without `previous_message` the thread is unknown; the channel conversation is the guess.
    previous = event.get("previous_message") or {}
    return SlackDeletion(
        conversation_id=conversation_id(team_id=team_id, channel_id=channel_id, ts=str(ts),
                                        thread_ts=previous.get("thread_ts")),
        stored_id=stored_id(team_id=team_id, channel_id=channel_id, ts=str(ts)),
    )


def to_stored_message(
    post: SlackPost, *, names: Mapping[str, str], channel_name: str | None
) -> StoredMessage:
    """The normalized inbound turn for `post`, with display names already looked up."""
    mentions = mentioned_user_ids(post.text)
    return StoredMessage(
        id=post.stored_id,
        conversation_id=post.conversation_id,
        participant=Participant(
            kind="user", id=post.author_id,
            display_name=names.get(post.author_id) or post.author_name or post.author_id,
        ),
        content=render_mentions(post.text, names),
        timestamp=datetime.fromtimestamp(float(post.ts), tz=UTC),
        scope=post.scope,
        metadata=MessageMetadata(
            channel_type=CHANNEL_TYPE,
            channel_name=channel_name,
            channel_id=post.channel_id,
            thread_id=post.thread_ts,
            message_id=post.ts,
            mentions=mentions,
            reply_to_message_id=post.thread_ts,
            reply_to_participant_id=post.parent_user_id,
            extra={"is_bot": True} if post.is_bot else {},
        ),
    )
