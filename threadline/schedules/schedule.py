"""A schedule as data: what to post, where, when, and who asked (kept by `book`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from threadline.history.model import StoredMessage
from threadline.schedules.timing import Timing, zone

Kind = Literal["message", "prompt"]
State = Literal["active", "done", "cancelled", "missed"]
_ORIGIN_KEYS = ("channel_type", "channel_name", "channel_id", "thread_id", "message_id")


@dataclass(frozen=True, slots=True)
class Schedule:
    """One scheduled turn; see the module docstring. `origin` is where its posts go (the
    asking message's channel, thread and message, and its scope)."""

    conversation_id: str
    agent: str
    kind: Kind
    text: str
    due_at: datetime | None
    timezone: str
    created_by: str
    created_by_name: str = ""
    channel: str | None = None
    cron: str | None = None
    origin: Mapping[str, Any] = field(default_factory=dict)
    state: State = "active"
    name: str | None = None
    fired: int = 0
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def asked_in(cls, message: StoredMessage, *, channel: str | None, agent: str, kind: Kind,
                 text: str, timing: Timing, timezone: str) -> Schedule:
        """A schedule posting where `message` was said, made by its author."""
        meta = message.metadata
        origin = {key: getattr(meta, key) for key in _ORIGIN_KEYS}
        return cls(conversation_id=message.conversation_id, agent=agent, kind=kind, text=text,
                   due_at=timing.due_at, cron=timing.cron, timezone=timezone,
                   created_by=message.participant.id,
                   created_by_name=message.participant.display_name, channel=channel,
                   origin={**origin, "scope": message.scope})

    def describe(self) -> str:
        """One line for people: when, what, where."""
        when = (f"{self.cron} ({self.timezone})" if self.cron else
                self.due_at.astimezone(zone(self.timezone)).strftime(
                    f"%Y-%m-%d %H:%M {self.timezone}") if self.due_at else "never")
        what = "message" if self.kind == "message" else f"prompt for {self.agent}"
        return f"{self.id}: {when}, {what}: {self.text[:80]} (by {self.created_by_name})"
