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


def _id(value: object, field: str) -> str | BadRequest:
    if isinstance(value, str) and _ID.match(value):
        return value
    return BadRequest(400, f"bad_{field.replace('.', '_')}",
                      f"{field} must be 1 to 128 characters of letters, digits and ._~@/+=- "
                      f"(no spaces or colons), got {str(value)[:60]!r}")


def _addressees(value: object) -> tuple[str, ...] | BadRequest:
    names = [value] if isinstance(value, str) else value
    if value is None:
        return ()
    if isinstance(names, list) and names and all(isinstance(n, str) and n for n in names):
        return tuple(str(n) for n in names)
    return BadRequest(400, "bad_to", "to must be an agent's name or a list of names")


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
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        return BadRequest(400, "bad_text", "text must be a non-empty string")
    if len(text) > max_text_chars:
        return BadRequest(413, "message_too_long", f"text is {len(text)} characters; this "
                          f"channel takes at most {max_text_chars} (max_text_chars): split it")
    given_id = fields.get("message_id")
    if idempotency_key is not None and given_id is not None and given_id != idempotency_key:
        return BadRequest(400, "conflicting_ids", "the Idempotency-Key header and message_id "
                          "differ; send one, or the same in both")
    message_id = _id(idempotency_key if idempotency_key is not None else given_id,
                     "message_id")
    conversation = _id(fields.get("conversation_id"), "conversation_id")
    speaker = fields.get("speaker")
    if not isinstance(speaker, dict):
        return BadRequest(400, "bad_speaker", 'speaker must be an object: {"id": "...", '
                          '"name": "..."}')
    speaker_id = _id(speaker.get("id"), "speaker.id")
    name = speaker.get("name", "")
    addressees = _addressees(fields.get("to"))
    for part in (message_id, conversation, speaker_id, addressees):
        if isinstance(part, BadRequest):
            return part
    if not isinstance(name, str):
        return BadRequest(400, "bad_speaker_name", "speaker.name must be a string")
    assert isinstance(message_id, str) and isinstance(conversation, str)
    assert isinstance(speaker_id, str) and isinstance(addressees, tuple)
    extra = {"is_bot": True} if speaker.get("is_bot") is True else {}
    return StoredMessage(
        conversation_id=f"{CHANNEL_TYPE}:{channel}:{conversation}",
        id=f"{CHANNEL_TYPE}:{channel}:{conversation}:{message_id}",
        participant=Participant(kind="user", id=speaker_id, display_name=name[:200]),
        content=text,
        scope="dm",
        metadata=MessageMetadata(channel_type=CHANNEL_TYPE, channel_name=channel,
                                 channel_id=conversation, message_id=message_id,
                                 mentions=addressees, extra=extra))
