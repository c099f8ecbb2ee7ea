"""Schedules and human handoff as `threadline run` sets them up from the settings.

The runtime builds one `Proactive` before its agents (they take its per-turn tools), lets it
register its commands and its pipeline hook on the team, starts it once the channels are
connected (the YAML's schedules need each channel to say where a conversation is) and stops
it before the team, so no schedule fires into a pipeline that is draining.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog

from threadline.agents.agent import TurnTool
from threadline.backends.base import Backend
from threadline.channels.base import Channel
from threadline.config import Settings
from threadline.handoff import HandoffDesk, TeamDesk, hand_off_tool, handoff_commands
from threadline.schedules import (
    Schedule,
    ScheduleLimits,
    Scheduler,
    TimeZones,
    parse_when,
    schedule_commands,
    schedule_tool,
)
from threadline.team import Team

log = structlog.get_logger("threadline.runtime")


class Proactive:
    """The deployment's scheduler and handoff desk (either may be off); see the docstring."""

    def __init__(self, settings: Settings, backend: Backend) -> None:
        self.settings = settings
        self.channels: dict[str, Channel] = {}  # filled as the runtime builds them
        timing = settings.scheduler
        self.scheduler = Scheduler(
            backend.schedules, zones=TimeZones(timing.timezone,
                                                 per_channel=timing.channel_timezones,
                                                 channels=self.channels),
            admins=timing.admins, poll_interval=timing.poll_interval,
            limits=ScheduleLimits(floor=timedelta(minutes=timing.min_interval_minutes),
                                  per_person=timing.max_per_person,
                                  per_conversation=timing.max_per_conversation),
            late_after=timing.late_after, grace=timing.grace_hours * 3600,
        ) if timing.enabled and backend.schedules is not None else None
        handoff = settings.handoff
        self.desk = HandoffDesk(
            backend.handoffs, pause_hours=handoff.pause_hours,
            team=frozenset(handoff.team),
            desk=TeamDesk(handoff.notify.channel, handoff.notify.chat) if handoff.notify else None,
        ) if handoff.enabled and backend.handoffs is not None else None

    def turn_tools(self) -> list[TurnTool]:
        tools: list[TurnTool] = []
        if self.scheduler is not None and self.settings.scheduler.tool:
            tools.append(schedule_tool(self.scheduler))
        # Only with a team to hand to: without one, a model handing off would silence the bot
        # with nobody told.
        if (self.desk is not None and self.settings.handoff.tool
                and self.settings.handoff.notify is not None):
            tools.append(hand_off_tool(self.desk))
        return tools

    def register(self, team: Team) -> None:
        """The commands (`/remind`, `/reminders`, `/human`, `/bot`) and the pipeline's hooks."""
        pipeline = team.pipeline
        if self.scheduler is not None:
            self.scheduler.wake = pipeline.wake
            for command in schedule_commands(self.scheduler):
                pipeline.commands.register(command)
        if self.desk is not None:
            pipeline.handoff = self.desk
            for command in handoff_commands(self.desk):
                pipeline.commands.register(command)

    async def start(self, team: Team) -> None:
        if self.desk is not None:
            self.desk.attach(self.channels, team.pipeline.inbox)
        if self.scheduler is not None:
            await self.scheduler.book.keep_configured(self._configured(team))
            self.scheduler.start()

    async def stop(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()

    def _configured(self, team: Team) -> list[Schedule]:
        """The YAML's schedules as the book keeps them (their first time from now)."""
        schedules = []
        now = datetime.now(UTC)
        for name, entry in self.settings.schedules.items():
            channel = self.channels[entry.channel]
            attachment = team.pipeline.attachments[entry.channel]
            agent = entry.agent or attachment.agents[0].name
            tz = (entry.timezone or self.settings.scheduler.channel_timezones.get(entry.channel)
                  or self.settings.scheduler.timezone)
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
                timezone=tz, created_by="config", created_by_name=f"the config ({name})",
                channel=entry.channel, origin=origin, name=name))
        return schedules
