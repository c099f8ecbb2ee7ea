"""Turns as JSON-ready data: one encoding for the outbox, the inbox and history exports."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    ToolExchange,
)


def message_to_dict(message: StoredMessage) -> dict[str, Any]:
    """A turn as plain JSON-ready data; `message_from_dict` gives back an equal turn."""
    metadata = message.metadata
    return {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "participant": {"kind": message.participant.kind, "id": message.participant.id,
                        "display_name": message.participant.display_name},
        "content": message.content,
        "timestamp": message.timestamp.isoformat(),
        "scope": message.scope,
        "metadata": {
            "channel_type": metadata.channel_type,
            "channel_name": metadata.channel_name,
            "channel_id": metadata.channel_id,
            "thread_id": metadata.thread_id,
            "message_id": metadata.message_id,
            "mentions": list(metadata.mentions),
            "is_summary": metadata.is_summary,
            "summary_of": list(metadata.summary_of) if metadata.summary_of else None,
            "reply_to_message_id": metadata.reply_to_message_id,
            "reply_to_participant_id": metadata.reply_to_participant_id,
            "extra": dict(metadata.extra),
        },
        "tool_exchanges": [exchange.as_dict() for exchange in message.tool_exchanges],
        "sequence": message.sequence,
        "token_count": message.token_count,
    }


def message_from_dict(raw: Mapping[str, Any]) -> StoredMessage:
    """The turn `message_to_dict` described; raises KeyError/ValueError on malformed data."""
    meta = dict(raw["metadata"])
    extra = meta.pop("extra", None) or {}
    summary_of = meta.pop("summary_of", None)
    metadata = MessageMetadata(
        **meta,
        summary_of=(int(summary_of[0]), int(summary_of[1])) if summary_of else None,
        extra=extra,
    )
    participant = raw["participant"]
    return StoredMessage(
        id=raw["id"],
        conversation_id=raw["conversation_id"],
        participant=Participant(kind=participant["kind"], id=participant["id"],
                                display_name=participant["display_name"]),
        content=raw["content"],
        timestamp=datetime.fromisoformat(raw["timestamp"]),
        scope=raw["scope"],
        metadata=metadata,
        tool_exchanges=tuple(ToolExchange.from_dict(e) for e in raw["tool_exchanges"]),
        sequence=raw.get("sequence"),
        token_count=raw.get("token_count"),
    )
