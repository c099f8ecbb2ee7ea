"""Schedules as a feature: `/remind` and `/reminders`, the `schedule` tool, the YAML's
`schedules:` kept in the book, and the scheduler firing due slots into the turn inbox
(`scheduler:` in the YAML). Schedules' turns are answered by the `schedules` stage, which the
team always has."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from threadline.config import Settings
from threadline.features import Feature, FeatureContext, FeatureParts, Running
from threadline.schedules.commands import schedule_commands
from threadline.schedules.limits import ScheduleLimits
from threadline.schedules.schedule import Schedule
from threadline.schedules.scheduler import Scheduler
from threadline.schedules.timing import parse_when
from threadline.schedules.tool import schedule_tool
from threadline.schedules.turns import CONFIG_AUTHOR
from threadline.schedules.zones import TimeZones
from threadline.team import Team


class _SchedulerService(Running):
    """Starts firing once the channels are built (the YAML's schedules need each channel to
    say where a conversation is); stopped before the team, so nothing fires into a pipeline
    that is draining."""

    def __init__(self, scheduler: Scheduler, context: FeatureContext) -> None:
        self.scheduler = scheduler
        self.context = context

    async def start(self, team: Team) -> None:
        self.scheduler.wake = team.pipeline.wake
        await self.scheduler.book.keep_configured(configured(self.context, team))
        self.scheduler.start()

    async def stop(self) -> None:
        await self.scheduler.stop()


def configured(context: FeatureContext, team: Team) -> list[Schedule]:
    """The YAML's schedules as the book keeps them (their first time from now)."""
    settings: Settings = context.settings
    schedules = []
    now = datetime.now(UTC)
    for name, entry in settings.schedules.items():
        channel = context.channels[entry.channel]
        agent = entry.agent or team.pipeline.attachments[entry.channel].agents[0].name
        tz = (entry.timezone or settings.scheduler.channel_timezones.get(entry.channel)
              or settings.scheduler.timezone)
        when = f"cron {entry.cron}" if entry.cron else str(entry.at)
        meta = channel.metadata_for(entry.conversation)
        origin = {"channel_type": meta.channel_type, "channel_name": meta.channel_name,
                  "channel_id": meta.channel_id, "thread_id": meta.thread_id,
                  "scope": "thread" if meta.thread_id else "channel"}
        schedules.append(Schedule(
            conversation_id=entry.conversation, agent=agent,
            kind="message" if entry.message is not None else "prompt",
            text=entry.message or entry.prompt or "",
            due_at=parse_when(when, now=now, tz=tz).due_at, cron=entry.cron,
            timezone=tz, created_by=CONFIG_AUTHOR, created_by_name=f"the config ({name})",
            channel=entry.channel, origin=origin, name=name))
    return schedules


def _build(context: FeatureContext) -> FeatureParts | None:
    timing = context.settings.scheduler
    if not timing.enabled or context.backend.schedules is None:
        return None
    scheduler = Scheduler(
        context.backend.schedules, zones=TimeZones(timing.timezone,
                                                   per_channel=timing.channel_timezones,
                                                   channels=context.channels),
        admins=timing.admins, poll_interval=timing.poll_interval,
        limits=ScheduleLimits(floor=timedelta(minutes=timing.min_interval_minutes),
                              per_person=timing.max_per_person,
                              per_conversation=timing.max_per_conversation),
        late_after=timing.late_after, grace=timing.grace_hours * 3600)
    return FeatureParts(commands=schedule_commands(scheduler),
                        turn_tools=(schedule_tool(scheduler),) if timing.tool else (),
                        service=_SchedulerService(scheduler, context))


FEATURE = Feature(name="schedules", build=_build)
