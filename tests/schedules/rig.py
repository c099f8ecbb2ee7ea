"""An in-process team on a real SQLite store with the fake Messages API, a hand-moved clock,
and the scheduler and handoff desk wired as `threadline run` wires them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.fakes.anthropic import FakeAnthropic
from threadline.agents import Agent
from threadline.agents.agent import Tooling
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.handoffs import SqlHandoffBook
from threadline.backends.sql.schedules import SqlScheduleBook
from threadline.channels.local import LocalChannel
from threadline.commands import CommandRegistry
from threadline.handoff import HandoffDesk, TeamDesk, handoff_commands
from threadline.handoff.stage import HandoffStage
from threadline.people.access import Access
from threadline.schedules import Scheduler, schedule_commands, schedule_tool
from threadline.schedules.stage import ScheduleStage
from threadline.team import Team, default_commands


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self.moment = start

    def now(self) -> datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@dataclass
class Rig:
    store: SqlConversationStore
    team: Team
    channel: LocalChannel
    desk_channel: LocalChannel
    model: FakeAnthropic
    scheduler: Scheduler
    desk: HandoffDesk
    clock: FakeClock

    async def say(self, text: str, user: str = "ann") -> list[str]:
        """The replies posted in answer to this line."""
        before = len(self.channel.sent)
        await self.channel.say(text, user=user)
        return [r.text for r in self.channel.sent[before:]]

    def prompt_text(self, number: int) -> str:
        return json.dumps(self.model.bodies[number]["messages"])

    async def posted(self, count: int) -> list[str]:
        """Wait until the room holds `count` posts; all of them."""
        async with asyncio.timeout(30):
            while len(self.channel.sent) < count:  # noqa: ASYNC110 - the pipeline's task posts
                await asyncio.sleep(0.02)
        return [r.text for r in self.channel.sent]


@asynccontextmanager
async def rig(url: str, model: FakeAnthropic, clock: FakeClock, *,
              admins: tuple[str, ...] = (), access: Access | None = None
              ) -> AsyncIterator[Rig]:
    async with SqlConversationStore(url) as store:
        scheduler = Scheduler(SqlScheduleBook(store), clock=clock, admins=admins)
        desk = HandoffDesk(SqlHandoffBook(store), pause_hours=2, desk=TeamDesk("desk", "team"),
                           clock=clock)
        tools: list[Callable[..., object]] = [schedule_tool(scheduler)]
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(model.client()), tooling=Tooling(turn_tools=tools))
        team = Team([agent], stages={"handoff": HandoffStage(desk),
                                     "schedules": ScheduleStage(clock)},
                    commands=CommandRegistry((*default_commands(), *schedule_commands(scheduler),
                                              *handoff_commands(desk, access))))
        channel, desk_channel = LocalChannel(name="local"), LocalChannel(name="desk",
                                                                          room="team")
        team.attach(channel)
        team.attach(desk_channel)
        scheduler.wake = team.pipeline.wake
        await team.start()
        desk.attach({"desk": desk_channel}, team.pipeline.inbox)
        try:
            yield Rig(store, team, channel, desk_channel, model, scheduler, desk, clock)
        finally:
            await team.stop()
