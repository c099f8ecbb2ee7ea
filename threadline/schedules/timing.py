"""When a schedule fires: reading what people and models write, and the next cron occurrence.

One parser for every way a schedule is made (the `schedule` tool, `/remind`, the YAML and the
CLI), so "in 30 minutes" means the same everywhere:

    in 30 minutes | in 2 hours | in 1 day | in 45 seconds | in 1 week
    at 9:00 | 9:00 | today 17:30 | tomorrow 9:00 | tomorrow at 9:00
    2026-12-01 14:00 | 2026-12-01T14:00 | 2026-12-01T14:00:00+01:00
    cron 0 9 * * 1 | every 0 9 * * 1          (minute hour day month weekday)

Local times are read in the asker's time zone (see `threadline.schedules.zones`); a time of
day already past today means tomorrow. Cron expressions are `croniter`'s, evaluated in the
schedule's time zone so "9:00 every Monday" stays 9:00 across daylight-saving changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from threadline.errors import ConfigError

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_RELATIVE = re.compile(
    r"^in\s+(\d+(?:\.\d+)?)\s*(second|sec|s|minute|min|m|hour|hr|h|day|d|week|w)s?$")
_SHORT = {"sec": "second", "s": "second", "min": "minute", "m": "minute", "hr": "hour",
          "h": "hour", "d": "day", "w": "week"}
_TIME_OF_DAY = re.compile(r"^(?:(today|tomorrow)\s+)?(?:at\s+)?(\d{1,2})[:.h](\d{2})$")
_CRON = re.compile(r"^(?:cron|every)\s+(.+)$")
WHEN_FORMS = ("'in 30 minutes', 'tomorrow 9:00', '17:30', '2026-12-01 14:00' or "
              "'cron 0 9 * * 1' (minute hour day month weekday)")


@dataclass(frozen=True, slots=True)
class Timing:
    """A first due time (UTC) and, for a recurring schedule, its cron expression."""

    due_at: datetime
    cron: str | None = None


def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`; a ConfigError naming it when it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {name!r}; use an IANA name such as "
                          "'Europe/Paris' or 'UTC'") from None


def next_occurrence(cron: str, tz: str, after: datetime) -> datetime:
    """The first time `cron` fires strictly after `after`, in UTC."""
    local = after.astimezone(zone(tz))
    found: datetime = croniter(cron, local).get_next(datetime)
    return found.astimezone(UTC)


def parse_when(text: str, *, now: datetime, tz: str) -> Timing:
    """The timing `text` describes (see the module docstring); ValueError saying the forms."""
    words = " ".join(text.strip().lower().split())
    cron = _CRON.match(words)
    if cron is not None:
        expression = cron.group(1)
        if not croniter.is_valid(expression):
            raise ValueError(f"{expression!r} is not a cron expression (five fields: minute "
                             "hour day month weekday, for example '0 9 * * 1')")
        return Timing(due_at=next_occurrence(expression, tz, now), cron=expression)
    relative = _RELATIVE.match(words)
    if relative is not None:
        unit = _SHORT.get(relative.group(2), relative.group(2))
        return Timing(due_at=now + timedelta(seconds=float(relative.group(1)) * _UNITS[unit]))
    local_now = now.astimezone(zone(tz))
    of_day = _TIME_OF_DAY.match(words)
    if of_day is not None:
        day, hour, minute = of_day.group(1), int(of_day.group(2)), int(of_day.group(3))
        if hour > 23 or minute > 59:
            raise ValueError(f"{text.strip()!r} is not a time of day")
        on = local_now.date() + timedelta(days=1 if day == "tomorrow" else 0)
        due = _local(on, time(hour, minute), tz)
        if due <= now and day is None:
            due = _local(on + timedelta(days=1), time(hour, minute), tz)
        return Timing(due_at=due)
    try:
        parsed = datetime.fromisoformat(words.replace(" ", "T", 1).upper())
    except ValueError:
        raise ValueError(f"cannot read {text.strip()!r} as a time; write {WHEN_FORMS}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone(tz))
    return Timing(due_at=parsed.astimezone(UTC))


def _local(day: date, at: time, tz: str) -> datetime:
    return datetime.combine(day, at, tzinfo=zone(tz)).astimezone(UTC)


def split_when(text: str) -> tuple[str, str]:
    """`/remind`'s arguments as (when, what): `in 30 minutes to call Bob`, `tomorrow 9:00:
    stand-up`, `cron 0 9 * * 1 post the report`. ValueError saying the form."""
    words = text.strip()
    cron = re.match(r"^((?:cron|every)\s+(?:\S+\s+){4}\S+)\s+(?:to\s+)?(.+)$", words, re.I)
    if cron is not None:
        return cron.group(1), cron.group(2).strip()
    parts = re.split(r"\s+to\s+|:\s+", words, maxsplit=1)
    if len(parts) == 2 and parts[0] and parts[1].strip():
        return parts[0], parts[1].strip()
    raise ValueError("write /remind WHEN to WHAT, for example '/remind in 30 minutes to check "
                     "the deploy' or '/remind tomorrow 9:00: stand-up'")
