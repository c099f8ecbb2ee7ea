"""Scheduler and schedule settings: the `scheduler:` section and each `schedules:` entry."""

from __future__ import annotations

from pydantic import (
    Field,
)

from threadline.settings_section import Section


class SchedulerSettings(Section):
    """Scheduled turns (`threadline.schedules`): times are read in the person's zone where the
    platform says (Slack), else `channel_timezones[channel]`, else `timezone`. A slot that
    fell due while no process ran is posted late (with a note, when over `late_after`
    seconds) within `grace_hours`, else skipped. `admins` (identities such as `slack:T1:U7`)
    may cancel anyone's schedule; `tool` gives every agent the `schedule` tool. What people
    schedule is held to a floor (`min_interval_minutes` between a recurring schedule's posts)
    and caps (`max_per_person`, `max_per_conversation` active schedules), so a member cannot
    turn the bot into a flood; the YAML's own schedules are the operator's and are not."""

    enabled: bool = True
    """Run scheduled posts and prompts."""
    timezone: str = "UTC"
    """The zone schedule times are read in when neither the platform nor channel_timezones gives
    one."""
    channel_timezones: dict[str, str] = Field(default_factory=dict)
    """A time zone per channel name, for times said there."""
    poll_interval: float = Field(default=1.0, gt=0)
    """Seconds between two looks for schedules that fell due."""
    late_after: float = Field(default=60.0, ge=0)
    """A slot posted more than this many seconds late carries a note saying so."""
    grace_hours: float = Field(default=24.0, gt=0)
    """A slot that fell due while no process ran is still posted within this many hours, else
    skipped."""
    admins: list[str] = Field(default_factory=list)
    """Identities (slack:T1:U7) that may cancel anyone's schedule."""
    tool: bool = True
    """Give every agent the schedule tool."""
    min_interval_minutes: float = Field(default=5.0, gt=0)
    """The shortest gap between two posts of a recurring schedule a person makes (the tool,
    /remind); a cron firing more often, or with a seconds field, is refused."""
    max_per_person: int = Field(default=10, ge=1)
    """Active schedules one person may keep (the tool and /remind; the YAML's do not count)."""
    max_per_conversation: int = Field(default=20, ge=1)
    """Active schedules people may keep in one conversation (the YAML's do not count)."""


class ScheduleEntry(Section):
    """A schedule the YAML keeps (`schedules: {name: ...}`): `message` posted as written or
    `prompt` answered by `agent` (default: the channel's first), at `at` once or on `cron`,
    in `conversation` (its id, `slack:T1:C0REPORTS`) through `channel`."""

    channel: str
    """The channels: entry it posts through."""
    conversation: str
    """The conversation id it posts in (slack:T1:C0REPORTS)."""
    cron: str | None = None
    """A cron expression, for a recurring schedule."""
    at: str | None = None
    """A time, for a schedule that runs once."""
    message: str | None = None
    """Text posted as written."""
    prompt: str | None = None
    """A prompt the agent answers; its answer is posted."""
    agent: str | None = None
    """The agent that answers prompt (default: the channel's first)."""
    timezone: str | None = None
    """The zone cron and at are read in (default: the scheduler's)."""
