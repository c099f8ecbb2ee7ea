"""Reading one signed webhook body into the turn it carries, or saying in words what is wrong.

    {"conversation_id": "order-1234", "message_id": "evt-81",
     "speaker": {"id": "customer-42", "name": "Ada"}, "text": "Where is my parcel?",
     "to": "billing"}

`message_id` (or the `Idempotency-Key` header) is the sender's id for this message: a delivery
retried with the same one is the same turn (its stored id is derived from it), answered once.
`to` names the agent (or agents) the message is for; without it the channel's first agent
answers, as in a direct message. `speaker.is_bot` marks another bot (answered only with
`allow_bots`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from threadline.history.model import MessageMetadata, Participant, StoredMessage

CHANNEL_TYPE = "http"
# Ids the caller chooses: printable, no spaces or colons (a colon separates the parts of a
# conversation id), short enough for every store's columns.
_ID = re.compile(r"^[A-Za-z0-9._~@/+=-]{1,128}$")


@dataclass(frozen=True, slots=True)
class BadRequest:
    """Why a (signed) body was not taken: an HTTP status, a short code, what to do."""

    status: int
    code: str
    message: str


class _Unreadable(Exception):
    """A field that cannot be taken; carries the answer (caught in `turn_from`)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.answer = BadRequest(status, code, message)


def _id(value: object, field: str) -> str:
    if isinstance(value, str) and _ID.match(value):
        return value
    raise _Unreadable(400, f"bad_{field.replace('.', '_')}",
                      f"{field} must be 1 to 128 characters of letters, digits and ._~@/+=- "
                      f"(no spaces or colons), got {str(value)[:60]!r}")


def _addressees(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if isinstance(names, list) and names and all(isinstance(n, str) and n for n in names):
        return tuple(str(n) for n in names)
    raise _Unreadable(400, "bad_to", "to must be an agent's name or a list of names")


def _text(fields: dict[str, Any], max_text_chars: int) -> str:
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _Unreadable(400, "bad_text", "text must be a non-empty string")
    if len(text) > max_text_chars:
        raise _Unreadable(413, "message_too_long", f"text is {len(text)} characters; this "
                          f"channel takes at most {max_text_chars} (max_text_chars): split it")
    return text


def _message_id(fields: dict[str, Any], idempotency_key: str | None) -> str:
    given = fields.get("message_id")
    if idempotency_key is not None and given is not None and given != idempotency_key:
        raise _Unreadable(400, "conflicting_ids", "the Idempotency-Key header and message_id "
                          "differ; send one, or the same in both")
    return _id(idempotency_key if idempotency_key is not None else given, "message_id")


def _speaker(fields: dict[str, Any]) -> tuple[Participant, bool]:
    """The author, and whether they are another bot."""
    speaker = fields.get("speaker")
    if not isinstance(speaker, dict):
        raise _Unreadable(400, "bad_speaker", 'speaker must be an object: {"id": "...", '
                          '"name": "..."}')
    speaker_id = _id(speaker.get("id"), "speaker.id")
    name = speaker.get("name", "")
    if not isinstance(name, str):
        raise _Unreadable(400, "bad_speaker_name", "speaker.name must be a string")
    return (Participant(kind="user", id=speaker_id, display_name=name[:200]),
            speaker.get("is_bot") is True)


def turn_from(body: bytes, *, channel: str, idempotency_key: str | None,
              max_text_chars: int) -> StoredMessage | BadRequest:
    """The inbound turn a webhook body carries (see the module docstring)."""
    try:
        fields: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return BadRequest(400, "malformed_body", f"the body is not JSON ({exc}); send a JSON "
                          "object with conversation_id, message_id, speaker and text")
    if not isinstance(fields, dict):
        return BadRequest(400, "malformed_body", "the body must be a JSON object with "
                          "conversation_id, message_id, speaker and text")
    try:
        text = _text(fields, max_text_chars)
        message_id = _message_id(fields, idempotency_key)
        conversation = _id(fields.get("conversation_id"), "conversation_id")
        author, is_bot = _speaker(fields)
        addressees = _addressees(fields.get("to"))
    except _Unreadable as unreadable:
        return unreadable.answer
    return StoredMessage(
        conversation_id=f"{CHANNEL_TYPE}:{channel}:{conversation}",
        id=f"{CHANNEL_TYPE}:{channel}:{conversation}:{message_id}",
        participant=author, content=text, scope="dm",
        metadata=MessageMetadata(channel_type=CHANNEL_TYPE, channel_name=channel,
                                 channel_id=conversation, message_id=message_id,
                                 mentions=addressees, extra={"is_bot": True} if is_bot else {}))
