"""Bot Framework activities from Teams read as Threadline turns; the one place for Teams ids.

Pure functions over the wire format (the activity JSON Teams posts, camelCase), no I/O.

Conversation ids. Teams' own ids carry `:`, `;`, `@` and `=` (`19:abc@thread.tacv2;messageid=1`,
`a:1Xy...`), which would break every place that reads our ids as `PLATFORM:PARTS`, so each
Teams id is percent-encoded as one part (`quote(..., safe="")`):

- a personal (1:1) chat: `teams:TENANT:CHAT` (scope `dm`);
- a group chat: `teams:TENANT:CHAT` (scope `channel`);
- a channel: every message lives in a thread under a root post, so each thread is its own
  conversation, `teams:TENANT:CHANNEL:ROOT` (scope `thread`), where `CHANNEL` is the channel's
  conversation id without its `;messageid=` and `ROOT` the root post's id.

The tenant is the workspace (`threadline.history.speakers.workspace_of`). A turn's stored id is
`teams:TENANT:CONVERSATION:ACTIVITY` (the activity id is unique within its conversation; an edit
or deletion carries the same one). A person is their Entra object id (`aadObjectId`, a GUID the
same in every chat) when Teams gives it, else their encoded Teams id.

Mentions are `<at>Name</at>` in the text plus a `mention` entity with the mentioned account's id
(`28:APP_ID` for a bot) and name: both ids and names go to `metadata.mentions`, and the text
reads `@Name`, as on the other platforms. A message that @mentions another bot and not this
one is left to that bot (`_for_another_bot`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

from threadline.history.model import MessageMetadata, Participant, Scope, StoredMessage, utc_now

CHANNEL_TYPE = "teams"
# A file someone sent the bot in a 1:1 chat: a pre-authenticated download URL (SharePoint).
DOWNLOAD_INFO = "application/vnd.microsoft.teams.file.download.info"
COMMAND_VERB = "threadline_command"  # the Action.Execute verb of a command answer's buttons
_AT = re.compile(r"<at(?:\s[^>]*)?>(.*?)</at>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def encode_id(raw: str) -> str:
    """One Teams id as one part of our ids (no `:` or `;` left in it)."""
    return quote(raw, safe="")


def decode_id(part: str) -> str:
    """The Teams id an encoded part stands for."""
    return unquote(part)


@dataclass(frozen=True, slots=True)
class Place:
    """Where an activity was said: our conversation id and what a reply needs."""

    conversation_id: str
    scope: Scope
    tenant_id: str
    # The Teams conversation a reply is posted to (a channel thread's includes `;messageid=`).
    reply_to_conversation: str
    # The channel's conversation id without the thread (None outside channels).
    channel: str | None
    root: str | None


def place_of(activity: Mapping[str, Any], *, default_tenant: str) -> Place:
    """Where `activity` was said (raises KeyError/ValueError when it says nowhere)."""
    conversation = activity["conversation"]
    raw = str(conversation["id"])
    if not raw:
        raise ValueError("the activity's conversation has no id")
    tenant = str(conversation.get("tenantId")
                 or ((activity.get("channelData") or {}).get("tenant") or {}).get("id")
                 or default_tenant)
    kind = conversation.get("conversationType")
    if kind == "channel":
        base, _, suffix = raw.partition(";")
        root = suffix.removeprefix("messageid=") if suffix.startswith("messageid=") else ""
        root = root or str(activity.get("replyToId") or activity.get("id") or "")
        if not root:
            raise ValueError("a channel activity without a thread or an id")
        return Place(conversation_id=f"teams:{encode_id(tenant)}:{encode_id(base)}:"
                                     f"{encode_id(root)}",
                     scope="thread", tenant_id=tenant,
                     reply_to_conversation=f"{base};messageid={root}", channel=base, root=root)
    return Place(conversation_id=f"teams:{encode_id(tenant)}:{encode_id(raw)}",
                 scope="dm" if kind == "personal" else "channel", tenant_id=tenant,
                 reply_to_conversation=raw, channel=None, root=None)


def reply_conversation(*, channel_id: str, thread_id: str | None) -> str:
    """The Teams conversation a post goes to: a channel thread, or the chat itself."""
    return f"{channel_id};messageid={thread_id}" if thread_id else channel_id


def stored_id(place: Place, activity_id: str) -> str:
    """The turn id of one activity (edits and deletions share it); a channel's activity ids
    are unique in the channel, so the thread is left out of it."""
    chat = place.channel or place.reply_to_conversation
    return f"teams:{encode_id(place.tenant_id)}:{encode_id(chat)}:{encode_id(activity_id)}"


def participant_of(account: Mapping[str, Any]) -> Participant:
    """The person (or bot) an activity is from, under their stable id."""
    raw_id = str(account.get("id") or "")
    person = str(account.get("aadObjectId") or "") or encode_id(raw_id)
    if not person:
        raise ValueError("the activity says nobody sent it (no from.id)")
    return Participant(kind="user", id=person, display_name=str(account.get("name") or person))


def mentions_of(activity: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids and names of every account the activity's `mention` entities name."""
    found: list[str] = []
    for entity in activity.get("entities") or ():
        if not isinstance(entity, Mapping) or entity.get("type") != "mention":
            continue
        mentioned = entity.get("mentioned") or {}
        found += [str(v) for v in (mentioned.get("id"), mentioned.get("name")) if v]
    return tuple(dict.fromkeys(found))


def readable_text(text: str) -> str:
    """Teams' message text as people read it: `<at>Name</at>` as `@Name`, other markup gone."""
    marked = _AT.sub(lambda m: "@" + html.unescape(_TAGS.sub("", m.group(1))).strip(), text)
    return html.unescape(_TAGS.sub("", marked)).strip()


def _for_another_bot(activity: Mapping[str, Any], own_ids: frozenset[str]) -> bool:
    """Whether the message @mentions a bot (`28:...`) and not this one: that bot's to take.

    With the permission to read every message, each bot in a chat or channel receives every
    message; the copies share one turn id, and the first bot to record it would route it among
    its own agents alone, so a message for the other bot's agent would go unanswered. Left to
    the bot it names, it is recorded once and answered by that bot's agents.
    """
    bots = {str((e.get("mentioned") or {}).get("id") or "")
            for e in activity.get("entities") or ()
            if isinstance(e, Mapping) and e.get("type") == "mention"}
    bots = {b for b in bots if b.startswith("28:")}
    return bool(bots) and not bots & own_ids


def _command_unaddressed(text: str, activity: Mapping[str, Any], own_ids: frozenset[str]) -> str:
    """`@Bot /forget` as `/forget`: in a chat or channel Teams puts the bot's mention before a
    command picked from its menu, and a command is read only at the start of a turn (the
    mention stays in `metadata.mentions`, so the turn is still addressed to the bot)."""
    for entity in activity.get("entities") or ():
        mentioned = entity.get("mentioned") or {} if isinstance(entity, Mapping) else {}
        name = mentioned.get("name")
        if name and mentioned.get("id") in own_ids and text.startswith(f"@{name}"):
            rest = text[len(name) + 1:].lstrip()
            if rest.startswith("/"):
                return rest
    return text


def _timestamp(activity: Mapping[str, Any]) -> datetime:
    raw = activity.get("timestamp")
    if isinstance(raw, str) and raw:
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            pass
    return utc_now()


def _metadata(activity: Mapping[str, Any], place: Place, **more: Any) -> MessageMetadata:
    channel_data = activity.get("channelData") or {}
    channel_name = ((channel_data.get("channel") or {}).get("name")
                    or (activity.get("conversation") or {}).get("name"))
    return MessageMetadata(
        channel_type=CHANNEL_TYPE, channel_name=str(channel_name) if channel_name else None,
        channel_id=place.channel or place.reply_to_conversation, thread_id=place.root,
        **more)


def message_turn(activity: Mapping[str, Any], *, default_tenant: str, own_ids: frozenset[str],
                 allow_bots: bool) -> StoredMessage | None:
    """The turn a `message` activity is, or None when it is not for us (our own, another
    bot's without `allow_bots`, or nothing said). Raises on an activity missing its parts."""
    sender = activity.get("from") or {}
    if str(sender.get("id") or "") in own_ids:
        return None
    is_bot = sender.get("role") == "bot"
    if (is_bot and not allow_bots) or _for_another_bot(activity, own_ids):
        return None
    text = _command_unaddressed(readable_text(str(activity.get("text") or "")), activity,
                                own_ids)
    if not text and not files_of(activity):
        return None  # a card submit, an image preview alone: nothing said
    place = place_of(activity, default_tenant=default_tenant)
    activity_id = str(activity.get("id") or "")
    if not activity_id:
        raise ValueError("a message activity without an id cannot be answered exactly once")
    reply_to = activity.get("replyToId")
    return StoredMessage(
        id=stored_id(place, activity_id), conversation_id=place.conversation_id,
        participant=participant_of(sender), content=text, timestamp=_timestamp(activity),
        scope=place.scope,
        metadata=_metadata(
            activity, place, message_id=activity_id, mentions=mentions_of(activity),
            reply_to_message_id=str(reply_to) if reply_to else None,
            extra={"service_url": str(activity.get("serviceUrl") or ""),
                   **({"timezone": str(activity["localTimezone"])}
                      if activity.get("localTimezone") else {}),
                   **({"is_bot": True} if is_bot else {})}),
    )


@dataclass(frozen=True, slots=True)
class SentFile:
    """A file a person sent in a 1:1 chat, as Teams describes it."""

    name: str
    unique_id: str
    download_url: str


def files_of(activity: Mapping[str, Any]) -> tuple[SentFile, ...]:
    """The files a message brings (Teams' download-info attachments; other attachments, such
    as the HTML copy of the message or card previews, are not files)."""
    found: list[SentFile] = []
    for attachment in activity.get("attachments") or ():
        if not isinstance(attachment, Mapping) or attachment.get("contentType") != DOWNLOAD_INFO:
            continue
        content = attachment.get("content") or {}
        url = content.get("downloadUrl") if isinstance(content, Mapping) else None
        if isinstance(url, str) and url:
            found.append(SentFile(name=str(attachment.get("name") or "file"),
                                  unique_id=str(content.get("uniqueId") or ""),
                                  download_url=url))
    return tuple(found)


def changed_turn(activity: Mapping[str, Any], *, default_tenant: str) -> tuple[str, str, str]:
    """(conversation id, stored id, new text) of a `messageUpdate` activity (an edit)."""
    place = place_of(activity, default_tenant=default_tenant)
    return (place.conversation_id, stored_id(place, str(activity["id"])),
            readable_text(str(activity.get("text") or "")))


def deleted_turn(activity: Mapping[str, Any], *, default_tenant: str) -> tuple[str, str]:
    """(conversation id, stored id) of a `messageDelete` activity."""
    place = place_of(activity, default_tenant=default_tenant)
    return place.conversation_id, stored_id(place, str(activity["id"]))


def press_turn(activity: Mapping[str, Any], *, default_tenant: str) -> StoredMessage | None:
    """The turn a pressed command button sends (an `adaptiveCard/action` invoke with our
    verb): its command, said by whoever pressed, where the card is. The invoke's id names the
    turn, so a redelivered press is one turn. None for another card's action."""
    action = ((activity.get("value") or {}).get("action") or {})
    data = action.get("data") or {}
    command = data.get("command") if isinstance(data, Mapping) else None
    if action.get("verb") != COMMAND_VERB or not isinstance(command, str) or not command:
        return None
    place = place_of(activity, default_tenant=default_tenant)
    return StoredMessage(
        id=f"{stored_id(place, str(activity['id']))}:press",
        conversation_id=place.conversation_id,
        participant=participant_of(activity.get("from") or {}),
        content=command, timestamp=_timestamp(activity), scope=place.scope,
        metadata=_metadata(activity, place, extra={
            "service_url": str(activity.get("serviceUrl") or ""),
            "button_of": str(activity.get("replyToId") or "")}),
    )


def command_card(text: str, choices: list[tuple[str, str]]) -> dict[str, Any]:
    """An Adaptive Card with `text` and an Action.Execute button per (label, command)."""
    return {
        "type": "AdaptiveCard", "version": "1.5",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "body": [{"type": "TextBlock", "text": text, "wrap": True}],
        "actions": [{"type": "Action.Execute", "title": label, "verb": COMMAND_VERB,
                     "data": {"command": command}} for label, command in choices],
    }
