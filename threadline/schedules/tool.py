"""The `schedule` tool: an agent keeps a promise ("I'll remind you in 30 minutes").

Made per turn, like the search tool: the conversation, the thread, the person asking and the
channel are captured by the closure from the turn being answered; the model only says when and
what. A reminder posts where it was asked, replying to the asking message.
"""

from __future__ import annotations

from typing import Any

from threadline.agents.tools import input_problem
from threadline.schedules.schedule import Schedule
from threadline.schedules.scheduler import Scheduler
from threadline.schedules.timing import WHEN_FORMS, parse_when, zone
from threadline.turn import TurnContext

SCHEDULE_TOOL_NAME = "schedule"
_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "pattern": r"\S",
                 "description": f"When to post, in the person's own time: {WHEN_FORMS}."},
        "text": {"type": "string", "pattern": r"\S",
                 "description": "What to post then (kind 'message'), or what you should do "
                                "then with this conversation's history (kind 'prompt')."},
        "kind": {"type": "string", "enum": ["message", "prompt"], "default": "message",
                 "description": "'message' posts the text as written (a reminder); 'prompt' "
                                "has you answer it then (a follow-up, a report)."},
    },
    "required": ["when", "text"],
    "additionalProperties": False,
}


class ScheduleTool:
    """A tool bound to one turn: schedules a post in the conversation it was asked in."""

    name = SCHEDULE_TOOL_NAME
    description = ("Schedule a post in this conversation: a reminder at a time, or a recurring "
                   "post (cron). Use it when someone asks to be reminded or for something "
                   "later or regularly; it replies with when it will happen.")

    def __init__(self, scheduler: Scheduler, context: TurnContext) -> None:
        self._scheduler = scheduler
        self._context = context
        self.input_schema: dict[str, Any] = dict(_INPUT_SCHEMA)

    async def run(self, input: dict[str, Any]) -> str:
        problem = input_problem(_INPUT_SCHEMA, input)
        if problem is not None:
            return f"error: {problem}"
        context, scheduler = self._context, self._scheduler
        tz = await scheduler.zones.of(context.inbound, context.channel)
        try:
            timing = parse_when(input["when"], now=scheduler.clock.now(), tz=tz)
            schedule = await scheduler.add_asked(Schedule.asked_in(
                context.inbound, channel=context.channel, agent=context.agent.name,
                kind=input.get("kind", "message"), text=input["text"], timing=timing,
                timezone=tz))
        except ValueError as exc:  # an unreadable time, or the operator's limits
            return f"error: not scheduled: {exc}"
        local = timing.due_at.astimezone(zone(tz))
        repeat = f", then on '{timing.cron}'" if timing.cron else ""
        return (f"Scheduled {schedule.id}: first at {local:%Y-%m-%d %H:%M} {tz}{repeat}. "
                "People can see or cancel it with /reminders.")


def schedule_tool(scheduler: Scheduler) -> Any:
    """The per-turn factory an agent takes in `turn_tools`."""
    return lambda context: ScheduleTool(scheduler, context)
