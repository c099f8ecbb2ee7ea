"""Builders for test turns, so tests read as conversations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from threadline.history.model import Participant, StoredMessage

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
ANN = Participant(kind="user", id="U1", display_name="Ann")
BOB = Participant(kind="user", id="U2", display_name="Bob")
SUPPORT = Participant(kind="agent", id="support", display_name="Support")


def turn(
    content: str,
    *,
    conversation_id: str = "c1",
    who: Participant = ANN,
    minute: int = 0,
    **fields: Any,
) -> StoredMessage:
    return StoredMessage(
        conversation_id=conversation_id,
        participant=who,
        content=content,
        timestamp=T0 + timedelta(minutes=minute),
        **fields,
    )
