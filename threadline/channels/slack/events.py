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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slack_sdk.models.blocks import (
    ContextActionsBlock,
    FeedbackButtonObject,
    FeedbackButtonsElement,
    MarkdownTextObject,
    SectionBlock,
)

from threadline.history.model import (
    MessageMetadata,
    Participant,
    Scope,
    StoredMessage,
    utc_now,
)

CHANNEL_TYPE = "slack"
CHOICE_ACTION = "threadline_command"  # action_id prefix of a command answer's buttons
# A section block's text limit: a longer answer is posted without buttons (it says what to type).
_SECTION_CHARS = 3000

# Subtypes that are someone saying something; every other subtype (joins, topic changes,
# `message_replied` bookkeeping, ...) is not a turn.
if TYPE_CHECKING:
    from threadline.commands import CommandChoice

_POST_SUBTYPES = frozenset({None, "thread_broadcast", "file_share", "me_message", "bot_message"})
_MARKUP = re.compile(r"<([@#!]?)([^>|]+)(?:\|([^>]*))?>")
_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
# Markup an agent may write on purpose (mentions, channel links, dates, links); kept as is.
_OUTGOING_MARKUP = re.compile(r"<(?:[@#!][^<>\s]+|(?:https?|mailto):[^<>\s]+)>")
# Special mentions that notify a crowd: `<!channel>`, `<!here>`, `<!everyone>`, user groups
# (`<!subteam^S1>`); every `<!...>` but a date is one.
_BROADCAST = re.compile(r"^<!(?!date\^)")
_MARKDOWN_BROADCAST = re.compile(r"<!(?!date\^)")


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
    # The `files` the post shares (Slack's file objects: id, name, size, url_private).
    files: tuple[Mapping[str, Any], ...] = ()


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


def team_of_conversation(conversation_id: str) -> str | None:
    """The workspace (team id) a Slack conversation id carries, or None for another id."""
    platform, _, rest = conversation_id.partition(":")
    team_id = rest.partition(":")[0]
    return team_id if platform == "slack" and team_id else None


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


def escape_outgoing(text: str, *, broadcast: bool = False) -> str:
    """Escape `&`, `<`, `>` as Slack asks, leaving deliberate markup (`<@U1>`, links) intact.

    Broadcast mentions (`<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^...>`) are posted
    inert, shown as written without notifying anyone, unless `broadcast`: a model's text or a
    member's reminder can hold them, and one member must not ping a whole workspace through
    the bot.
    """
    pieces: list[str] = []
    position = 0
    for match in _OUTGOING_MARKUP.finditer(text):
        markup = match.group(0)
        inert = not broadcast and _BROADCAST.match(markup) is not None
        pieces.append(_escape(text[position:match.start()]))
        pieces.append(_escape(markup) if inert else markup)
        position = match.end()
    pieces.append(_escape(text[position:]))
    return "".join(pieces)


def inert_markdown(text: str) -> str:
    """A streamed reply's `markdown_text` with its broadcast mentions made inert (a zero-width
    space after `<`: shown as written, not read as markup); a model's stream is never the
    operator's, so it never pings a crowd."""
    return _MARKDOWN_BROADCAST.sub("<\u200b!", text)


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
        files=tuple(f for f in event.get("files") or () if isinstance(f, Mapping)),
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


def choice_blocks(text: str, choices: Sequence[CommandChoice]) -> list[dict[str, Any]] | None:
    """Block Kit for `text` (already escaped) with a button per choice; None without choices
    or when the text is too long for a section block."""
    if not choices or len(text) > _SECTION_CHARS:
        return None
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {"type": "actions", "elements": [
            {"type": "button", "action_id": f"{CHOICE_ACTION}_{number}", "value": choice.command,
             "text": {"type": "plain_text", "text": choice.label}}
            for number, choice in enumerate(choices)]},
    ]


def feedback_blocks(text: str, choices: Sequence[CommandChoice]) -> list[dict[str, Any]] | None:
    """Block Kit for a reply's `text` (already escaped) with Slack's feedback buttons (a
    `context_actions` block holding `feedback_buttons`) from `choices` (positive, negative);
    None when the text is too long for a section block. A press arrives as a choice's does."""
    if len(choices) != 2 or len(text) > _SECTION_CHARS:
        return None
    positive, negative = (FeedbackButtonObject(text=c.label, value=c.command,
                                               accessibility_label=label)
                          for c, label in zip(choices, ("Good reply", "Bad reply"), strict=True))
    buttons = FeedbackButtonsElement(action_id=f"{CHOICE_ACTION}_feedback",
                                     positive_button=positive, negative_button=negative)
    return [SectionBlock(text=MarkdownTextObject(text=text)).to_dict(),
            ContextActionsBlock(elements=[buttons]).to_dict()]


def choice_turn(body: Mapping[str, Any], *, team_id: str) -> StoredMessage | None:
    """The turn a pressed button sends: its command, as the person who pressed it.

    Read as the slash command the button stands for, in the conversation of the message the
    button is on (its thread, when it is in one).
    """
    actions = body.get("actions") or [{}]
    command, _, text = str(actions[0].get("value") or "").partition(" ")
    user = body.get("user") or {}
    container = body.get("container") or {}
    channel = body.get("channel") or {}
    return slash_command_turn({
        "command": command, "text": text, "user_id": user.get("id"),
        "user_name": user.get("username") or user.get("name"),
        "channel_id": channel.get("id") or container.get("channel_id"),
        "channel_name": channel.get("name"), "team_id": (body.get("team") or {}).get("id"),
        "trigger_id": body.get("trigger_id"),
    }, team_id=team_id, thread_ts=container.get("thread_ts"))


def slash_command_turn(command: Mapping[str, Any], *, team_id: str,
                       thread_ts: str | None = None) -> StoredMessage | None:
    """The inbound turn for a slash command payload (`/forget confirm` as its text).

    A slash command has no message `ts`: its `trigger_id`, unique per invocation, names the
    turn. Slack runs slash commands in channels and DMs, never inside a thread, so the turn
    belongs to the channel's (or DM's) own conversation; a button pressed in a thread
    (`choice_turn`) gives its `thread_ts`. None when a field is missing.
    """
    name, channel_id = str(command.get("command") or ""), str(command.get("channel_id") or "")
    user_id, trigger = str(command.get("user_id") or ""), str(command.get("trigger_id") or "")
    if not (name.startswith("/") and channel_id and user_id and trigger):
        return None
    team_id = str(command.get("team_id") or team_id)
    scope: Scope = "dm" if channel_id.startswith("D") else ("thread" if thread_ts else "channel")
    return StoredMessage(
        id=f"slack:{team_id}:{channel_id}:command:{trigger}",
        conversation_id=conversation_id(team_id=team_id, channel_id=channel_id, ts="",
                                        thread_ts=thread_ts),
        participant=Participant(kind="user", id=user_id,
                                display_name=str(command.get("user_name") or user_id)),
        content=f"{name} {command.get('text') or ''}".strip(),
        timestamp=utc_now(),
        scope=scope,
        metadata=MessageMetadata(
            channel_type=CHANNEL_TYPE,
            channel_name=None if scope == "dm" else command.get("channel_name"),
            channel_id=channel_id,
            thread_id=thread_ts,
            extra={"slash_command": name},
        ),
    )


@dataclass(frozen=True, slots=True)
class AssistantThread:
    """An `assistant_thread_started` / `assistant_thread_context_changed` event, read.

    The thread lives in the DM between the person and the app; `context_channel_id` is the
    channel the person is looking at beside it (None when Slack gave none).
    """

    conversation_id: str
    channel_id: str
    thread_ts: str
    user_id: str
    context_channel_id: str | None


def assistant_thread(event: Mapping[str, Any], *, team_id: str) -> AssistantThread | None:
    """The assistant thread an event is about, or None when the event lacks one."""
    thread = event.get("assistant_thread") or {}
    channel_id, thread_ts = str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or "")
    if not channel_id or not thread_ts:
        return None
    context = thread.get("context") or {}
    return AssistantThread(
        # The same id a message in that thread gets, so the context joins its conversation.
        conversation_id=conversation_id(team_id=team_id, channel_id=channel_id, ts="",
                                        thread_ts=thread_ts),
        channel_id=channel_id, thread_ts=thread_ts, user_id=str(thread.get("user_id") or ""),
        context_channel_id=str(context["channel_id"]) if context.get("channel_id") else None)


def context_turn(thread: AssistantThread, *, event_ts: str, team_id: str,
                 channel_name: str | None) -> StoredMessage | None:
    """The system turn saying which channel the person looks at (None without one).

    Named after the event's `event_ts`, so a retried event is stored once.
    """
    if thread.context_channel_id is None:
        return None
    shown = f"#{channel_name} ({thread.context_channel_id})" if channel_name else (
        f"channel {thread.context_channel_id}")
    return StoredMessage(
        id=f"slack:{team_id}:{thread.channel_id}:assistant-context:{event_ts}",
        conversation_id=thread.conversation_id,
        participant=Participant(kind="system", id="slack:assistant-context",
                                display_name="Slack"),
        content=f"The person in this assistant thread is now looking at {shown}.",
        timestamp=datetime.fromtimestamp(float(event_ts), tz=UTC) if event_ts else utc_now(),
        scope="dm",
        metadata=MessageMetadata(channel_type=CHANNEL_TYPE, channel_id=thread.channel_id,
                                 thread_id=thread.thread_ts,
                                 extra={"assistant_context": {
                                     "channel_id": thread.context_channel_id,
                                     "user_id": thread.user_id}}),
    )
