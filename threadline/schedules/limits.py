"""How often and how many: the floor and caps the operator puts on schedules people make.

A member can make a schedule (the `schedule` tool, `/remind`); every slot it fires is a post,
and for a prompt a model call. Without a floor, `* * * * * *` posts every second; without a cap,
one person can set a thousand reminders. So a recurring schedule a person asks for may fire at
most once every `floor` (a cron with a seconds field never passes), and a person, and a
conversation, keep at most so many active schedules. The operator's own schedules (the YAML's
`schedules:`) are not held to either: the operator chose them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from croniter import croniter

from threadline.schedules.timing import next_occurrence

# Occurrences looked at to find a cron's shortest gap: enough for any pattern a person writes
# (`0,1 9 * * 1` shows its one-minute gap at once), cheap to walk.
_OCCURRENCES = 64
_FIELDS = 5


class ScheduleRefused(ValueError):
    """A schedule a person asked for that the operator's limits do not allow (says which)."""


@dataclass(frozen=True, slots=True)
class ScheduleLimits:
    """The floor between a recurring schedule's posts and the caps on active schedules."""

    floor: timedelta = timedelta(minutes=5)
    per_person: int = 10
    per_conversation: int = 20

    def floor_in_words(self) -> str:
        minutes = self.floor.total_seconds() / 60
        return f"{minutes:g} minute{'' if minutes == 1 else 's'}"

    def check_cron(self, cron: str, *, tz: str, now: datetime) -> None:
        """Raise ScheduleRefused when `cron` would fire more often than the floor."""
        if len(cron.split()) != _FIELDS or not croniter.is_valid(cron):
            raise ScheduleRefused(
                f"{cron!r} is not a five-field cron (minute hour day month weekday); a seconds "
                f"field is not taken: recurring posts here are at most once every "
                f"{self.floor_in_words()}")
        shortest = _shortest_gap(cron, tz=tz, now=now)
        if shortest < self.floor:
            every = shortest.total_seconds() / 60
            raise ScheduleRefused(
                f"{cron!r} would post every {every:g} minute{'' if every == 1 else 's'}; "
                f"recurring posts here are at most once every {self.floor_in_words()} "
                "(the operator's scheduler.min_interval_minutes)")

    def check_counts(self, *, person: int, conversation: int, who: str) -> None:
        """Raise ScheduleRefused when `who` or the conversation already has its cap."""
        if person >= self.per_person:
            raise ScheduleRefused(
                f"{who} already has {person} active schedules, the most one person may keep "
                "(scheduler.max_per_person); cancel one with /reminders cancel ID first")
        if conversation >= self.per_conversation:
            raise ScheduleRefused(
                f"this conversation already has {conversation} active schedules, the most it "
                "may keep (scheduler.max_per_conversation); cancel one with /reminders cancel "
                "ID first")


def _shortest_gap(cron: str, *, tz: str, now: datetime) -> timedelta:
    """The shortest time between two of `cron`'s next occurrences."""
    previous = next_occurrence(cron, tz, now)
    shortest = timedelta.max
    for _ in range(_OCCURRENCES):
        following = next_occurrence(cron, tz, previous)
        shortest = min(shortest, following - previous)
        previous = following
    return shortest
