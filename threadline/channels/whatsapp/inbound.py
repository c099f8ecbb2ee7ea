"""Reading a WhatsApp Cloud API webhook: its messages as Threadline turns, its status callbacks.

Why not pywa's parser: its `Message.from_update` reads only the first entry, change and
message of a POST (Meta batches several into one), and requires the business-scoped user id
(`contacts[].user_id`), which payloads of numbers not yet moved to BSUIDs do not carry. Each
message is read here on its own, so one that cannot be read is skipped and the others of the
same POST are still taken.

Ids (documented, stable):
- conversation: `whatsapp:PHONE_NUMBER_ID:CHAT`, CHAT being the customer (their `wa_id`, or
  their business-scoped user id when WhatsApp gives no number) or a group's id;
- turn: `whatsapp:WAMID` (WhatsApp's message id, the same in every redelivery of the webhook).

Addressing: a 1:1 chat has no mentions, so a turn addresses an agent by opening with its name
and a colon or comma (`sales: do you ship to Lyon?`), or with `@sales` anywhere (read by the
core); otherwise it goes to the channel's first agent. A reply (WhatsApp's "context") to one
of the bot's messages reaches the agent that wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from threadline.channels.base import BotIdentity
from threadline.history.model import MessageMetadata, Participant, StoredMessage

CHANNEL_TYPE = "whatsapp"
# The message types that carry a file fetched through the media endpoint, and its default name.
MEDIA_TYPES = {"image": "image.jpg", "document": "document", "audio": "audio.ogg",
               "video": "video.mp4"}
_ADDRESSED = re.compile(r"^\s*@?([\w.-]{1,64})\s*[:,]\s*")


class UnreadableEvent(ValueError):
    """A part of a webhook that does not have the shape the Cloud API documents."""


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message of a webhook with what the Cloud API says around it."""

    phone_number_id: str
    display_phone_number: str
    message: Mapping[str, Any]
    contact: Mapping[str, Any]

    @property
    def wamid(self) -> str:
        return str(self.message.get("id") or "")


@dataclass(frozen=True, slots=True)
class DeliveryStatus:
    """One status callback: what became of a message the bot sent."""

    phone_number_id: str
    message_id: str
    status: str  # sent, delivered, read, failed (or a newer one WhatsApp adds)
    recipient: str
    errors: tuple[str, ...]
    at: datetime  # when WhatsApp says it happened (its `timestamp`; else when it arrived)
    error_code: int | None = None  # the first error's, for a failure
    error_title: str | None = None


def _status_time(timestamp: object) -> datetime:
    """A status's `timestamp` (seconds since the epoch, as a string); now when unreadable."""
    try:
        return datetime.fromtimestamp(int(str(timestamp)), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return datetime.now(UTC)


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise UnreadableEvent(f"{where} is not an object")
    return value


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnreadableEvent(f"{where} is not a list")
    return value


def events_in(payload: object) -> Iterator[InboundMessage | DeliveryStatus | UnreadableEvent]:
    """Every message and status of a webhook POST, in order; a part that cannot be read is
    yielded as its `UnreadableEvent`, so the rest are still read."""
    body = _mapping(payload, "the webhook body")
    for e, entry in enumerate(_list(body.get("entry"), "entry")):
        try:
            changes = _list(_mapping(entry, f"entry[{e}]").get("changes"),
                            f"entry[{e}].changes")
        except UnreadableEvent as error:
            yield error
            continue
        for c, change in enumerate(changes):
            try:
                yield from _events_of_change(_mapping(change, f"entry[{e}].changes[{c}]"))
            except UnreadableEvent as error:
                yield error


def _events_of_change(change: Mapping[str, Any]
                      ) -> Iterator[InboundMessage | DeliveryStatus | UnreadableEvent]:
    if change.get("field") != "messages":
        return  # account, template and other fields: nothing a conversation needs
    value = _mapping(change.get("value"), "value")
    metadata = _mapping(value.get("metadata"), "value.metadata")
    phone_id = str(metadata.get("phone_number_id") or "")
    if not phone_id:
        raise UnreadableEvent("value.metadata.phone_number_id is missing")
    display = str(metadata.get("display_phone_number") or "")
    contacts = [c for c in _list(value.get("contacts"), "value.contacts")
                if isinstance(c, Mapping)]
    for m, message in enumerate(_list(value.get("messages"), "value.messages")):
        if not isinstance(message, Mapping) or not message.get("id"):
            yield UnreadableEvent(f"value.messages[{m}] has no id")
            continue
        sender = message.get("from") or message.get("from_user_id")
        contact = next((c for c in contacts if sender in (c.get("wa_id"), c.get("user_id"))),
                       contacts[0] if contacts else {"wa_id": sender})
        yield InboundMessage(phone_id, display, message, contact)
    for s, status in enumerate(_list(value.get("statuses"), "value.statuses")):
        if not isinstance(status, Mapping) or not status.get("id"):
            yield UnreadableEvent(f"value.statuses[{s}] has no id")
            continue
        errors = tuple(f"{e.get('code')} {e.get('title') or e.get('message') or ''}".strip()
                       + (f": {e['error_data']['details']}"
                          if isinstance(e.get("error_data"), Mapping)
                          and e["error_data"].get("details") else "")
                       for e in _list(status.get("errors"), "errors") if isinstance(e, Mapping))
        first = next((e for e in _list(status.get("errors"), "errors")
                      if isinstance(e, Mapping)), {})
        code = first.get("code")
        yield DeliveryStatus(phone_id, str(status["id"]), str(status.get("status") or ""),
                             str(status.get("recipient_id") or status.get("recipient_user_id")
                                 or ""), errors, _status_time(status.get("timestamp")),
                             error_code=code if isinstance(code, int) else None,
                             error_title=str(first.get("title") or first.get("message") or "")
                             or None)


def conversation_id(phone_number_id: str, chat: str) -> str:
    """The documented conversation id of a chat with one business number."""
    return f"{CHANNEL_TYPE}:{phone_number_id}:{chat}"


def turn_id(wamid: str) -> str:
    """The stored id of a WhatsApp message: the same for every redelivery of it."""
    return f"{CHANNEL_TYPE}:{wamid}"


def customer_of(item: InboundMessage) -> tuple[str, str]:
    """(id, display name) of the person who wrote: their number, else their BSUID."""
    contact = item.contact
    customer = str(contact.get("wa_id") or contact.get("user_id") or item.message.get("from")
                   or item.message.get("from_user_id") or "")
    if not customer:
        raise UnreadableEvent(f"message {item.wamid} names no sender")
    profile = contact.get("profile")
    name = profile.get("name") if isinstance(profile, Mapping) else None
    return customer, str(name or customer)


def text_of(message: Mapping[str, Any]) -> str | None:
    """What a message says: its text, a media caption, a pressed button's command; None for
    kinds without words (reactions, locations, stickers, unsupported ones)."""
    kind = message.get("type")
    if kind == "text":
        return str(_mapping(message.get("text"), "text").get("body") or "")
    if kind in MEDIA_TYPES:
        return str(_mapping(message.get(kind), kind).get("caption") or "")
    if kind == "interactive":
        interactive = _mapping(message.get("interactive"), "interactive")
        reply = interactive.get("button_reply") or interactive.get("list_reply")
        return str(_mapping(reply, "interactive reply").get("id") or "") or None
    if kind == "button":  # a template's quick reply
        button = _mapping(message.get("button"), "button")
        return str(button.get("text") or button.get("payload") or "") or None
    return None


def addressed_names(text: str, agent_names: Collection[str]) -> tuple[str, ...]:
    """The agent a text opens by naming (`sales: ...`, `Sales, ...`), as a mention."""
    match = _ADDRESSED.match(text)
    if match is None:
        return ()
    named = match.group(1).lower()
    return tuple(name for name in agent_names if name.lower() == named)


def sent_at(message: Mapping[str, Any]) -> datetime:
    """When the customer sent it (WhatsApp's Unix timestamp); now when it is missing."""
    try:
        return datetime.fromtimestamp(int(message["timestamp"]), UTC)
    except (KeyError, TypeError, ValueError, OverflowError):
        return datetime.now(UTC)


def inbound_turn(item: InboundMessage, *, bot: BotIdentity,
                 agent_names: Collection[str]) -> StoredMessage | None:
    """The normalized turn for one inbound message, or None when it carries no words and no
    file (its files' text is added when they are taken in)."""
    message = item.message
    content = text_of(message)
    if content is None:
        return None
    customer, name = customer_of(item)
    group = message.get("group_id")
    chat = str(group) if group else customer
    context: Mapping[str, Any] = message.get("context") or {}
    if not isinstance(context, Mapping):
        raise UnreadableEvent(f"the context of message {item.wamid} is not an object")
    replied_from = str(context.get("from") or "") or None
    if replied_from is not None and replied_from in bot.aliases:
        replied_from = bot.user_id
    return StoredMessage(
        conversation_id=conversation_id(item.phone_number_id, chat),
        participant=Participant(kind="user", id=customer, display_name=name),
        content=content,
        id=turn_id(item.wamid),
        timestamp=sent_at(message),
        scope="channel" if group else "dm",
        metadata=MessageMetadata(
            channel_type=CHANNEL_TYPE, channel_name=name if not group else str(group),
            channel_id=chat, message_id=item.wamid,
            mentions=addressed_names(content, agent_names),
            reply_to_message_id=str(context.get("id") or "") or None,
            reply_to_participant_id=replied_from,
        ),
    )


def media_of(message: Mapping[str, Any]) -> tuple[str, str] | None:
    """(media id, file name) of the file a message carries, or None."""
    kind = message.get("type")
    if kind not in MEDIA_TYPES:
        return None
    media = _mapping(message.get(str(kind)), str(kind))
    media_id = str(media.get("id") or "")
    if not media_id:
        raise UnreadableEvent(f"the {kind} of message {message.get('id')} has no media id")
    default = "voice.ogg" if kind == "audio" and media.get("voice") else MEDIA_TYPES[kind]
    return media_id, str(media.get("filename") or default)
