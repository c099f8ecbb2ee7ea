"""Which conversations are handed to people, kept in the store's database.

One row per conversation: who asked for people (the customer), why, and until when the bot
stays quiet. Every replica reads the same row, so a handoff holds across processes and
restarts; a human reply moves `until` on, `/bot on` (or `until` passing) ends it.

A backend keeps the book as its `handoffs` part (the SQL backend's is
`threadline.backends.sql.handoffs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from threadline.history.store import ConversationStore


@dataclass(frozen=True, slots=True)
class Handoff:
    """A conversation handed to people: by whom, why, since and until when."""

    conversation_id: str
    customer_id: str
    customer_name: str
    reason: str
    started_at: datetime
    until: datetime


class HandoffBook(Protocol):
    """Handoffs kept by the backend (its `handoffs` part), beside the history `store`."""

    @property
    def store(self) -> ConversationStore:
        """The history the handoffs sit beside (the desk reads the conversation there)."""
        ...

    async def start(self, handoff: Handoff) -> bool:
        """Hand a conversation to people; False when it already was (its pause moves on)."""
        ...

    async def current(self, conversation_id: str, now: datetime) -> Handoff | None:
        """The conversation's handoff, if it is handed to people at `now`."""
        ...

    async def renew(self, conversation_id: str, until: datetime) -> None:
        """Keep the bot quiet until at least `until` (a human answered)."""
        ...

    async def end(self, conversation_id: str, now: datetime) -> bool:
        """Give the conversation back to the bot; False when it was not handed over."""
        ...
