"""A schedule's firing as a turn: what the inbox holds for it and what the pipeline reads back.

The turn is a system turn in the schedule's conversation, where the schedule was asked, with
its id made of the schedule and the slot (so a slot is one turn, however often it is claimed
or retried). Its `metadata.extra["schedule"]` says what the pipeline does with it: post the
text as written (`message`), or let the agent answer the text (`prompt`) with the
conversation's history. A slot fired late carries a note saying so; a recurring slot expires
when the next one is due (a turn that keeps failing is given up then, never piled up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.schedules.timing import zone

if TYPE_CHECKING:
    from threadline.schedules.schedule import Schedule

CONFIG_AUTHOR = "config"  # `created_by` of the YAML's schedules
SCHEDULE_PARTICIPANT = Participant(kind="system", id="schedule", display_name="schedule")
NOTHING_TO_SAY = "NOTHING"
_PROMPT = ("Scheduled prompt (set by {by}{recurring}): {text}\n"
           "Answer it for this conversation. If there is nothing worth posting now, answer "
           f"exactly {NOTHING_TO_SAY} and nothing will be posted.")


@dataclass(frozen=True, slots=True)
class ScheduledTurn:
    """What the pipeline needs to answer a schedule's turn."""

    schedule_id: str
    kind: str
    agent: str
    text: str
    expires: datetime | None
    by: str | None = None  # the participant who set it (None: the config file)
    by_name: str = ""

    @classmethod
    def read(cls, message: StoredMessage) -> ScheduledTurn | None:
        """The schedule behind a turn, or None for any other turn."""
        raw = message.metadata.extra.get("schedule")
        if message.participant != SCHEDULE_PARTICIPANT or not isinstance(raw, Mapping):
            return None
        expires = raw.get("expires")
        by = raw.get("by")
        return cls(schedule_id=str(raw["id"]), kind=str(raw["kind"]), agent=str(raw["agent"]),
                   text=message.content,
                   expires=datetime.fromisoformat(expires) if expires else None,
                   by=str(by) if by and by != CONFIG_AUTHOR else None,
                   by_name=str(raw.get("by_name") or ""))


def late_note(schedule: Schedule, slot: datetime, late_by: float) -> str:
    """Why a post comes late, in the schedule's time zone."""
    local = slot.astimezone(zone(schedule.timezone))
    posted = (slot + timedelta(seconds=late_by)).astimezone(zone(schedule.timezone))
    return (f"(late: this was due at {local:%Y-%m-%d %H:%M} {schedule.timezone} and is posted "
            f"at {posted:%H:%M}; the bot was not running then)")


def scheduled_turn(schedule: Schedule, *, slot: datetime, late_by: float | None,
                   expires: datetime | None) -> StoredMessage:
    """The turn recorded in the inbox when `schedule` fires for `slot`."""
    note = f"\n\n{late_note(schedule, slot, late_by)}" if late_by is not None else ""
    if schedule.kind == "message":
        content = schedule.text + note
    else:
        content = _PROMPT.format(by=schedule.created_by_name or schedule.created_by,
                                 recurring=f", {schedule.cron}" if schedule.cron else "",
                                 text=schedule.text) + note
    origin = dict(schedule.origin)
    extra: dict[str, Any] = {"schedule": {
        "id": schedule.id, "kind": schedule.kind, "agent": schedule.agent,
        "slot": slot.isoformat(), "late_by": late_by,
        "by": schedule.created_by, "by_name": schedule.created_by_name,
        "expires": expires.isoformat() if expires else None}}
    return StoredMessage(
        id=f"schedule:{schedule.id}:{int(slot.timestamp())}",
        conversation_id=schedule.conversation_id, participant=SCHEDULE_PARTICIPANT,
        content=content, timestamp=slot + timedelta(seconds=late_by or 0),
        scope=origin.pop("scope", "channel"),
        metadata=MessageMetadata(**{k: v for k, v in origin.items() if v is not None},
                                 extra=extra))


def operator_wrote(inbound: StoredMessage) -> bool:
    """Whether a post answering `inbound` is the operator's own words: a fixed message of a
    schedule the YAML keeps (so it may notify a whole channel; nothing a member or a model
    wrote may)."""
    raw = inbound.metadata.extra.get("schedule")
    return (inbound.participant == SCHEDULE_PARTICIPANT and isinstance(raw, Mapping)
            and raw.get("kind") == "message" and raw.get("by") == CONFIG_AUTHOR)


def nothing_to_say(inbound: StoredMessage, text: str) -> bool:
    """An agent's answer to a scheduled prompt that says there is nothing worth posting."""
    return (ScheduledTurn.read(inbound) is not None
            and text.strip().rstrip(".").upper() == NOTHING_TO_SAY)
