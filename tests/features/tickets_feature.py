"""A feature that lives outside threadline, as a third-party package's would: tickets.

It adds a command (`/ticket TEXT` opens one), a per-turn tool (`open_ticket`, bound to the
turn's conversation) and a stage (a message that opens with `!status` is answered with the
open tickets, before any agent sees it). Its settings are the YAML's `features: {tickets:}`.
It registers through the `threadline.features` entry point group (`registered_in`), so the
runtime finds it without naming it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tests.cli.helpers import entry_point_package
from threadline.agents.tools import Tool, function_tool
from threadline.commands import Command, CommandReply, CommandRequest
from threadline.features import Feature, FeatureContext, FeatureParts
from threadline.stages import Next, Turn
from threadline.turn import AgentResult, TurnContext


class TicketSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: str = "T"


class Desk:
    """The open tickets, by conversation."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.tickets: dict[str, list[str]] = {}

    def open(self, conversation_id: str, text: str) -> str:
        opened = self.tickets.setdefault(conversation_id, [])
        opened.append(text)
        return f"{self.prefix}-{len(opened)}"


class StatusStage:
    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        if not turn.message.content.startswith("!status") or not turn.agents:
            return await call_next(turn)
        recorded = await turn.actions.record(turn.message)
        if recorded is None:
            return []
        opened = DESK.tickets.get(turn.message.conversation_id, [])
        responder = turn.actions.agents[turn.agents[0]]
        return [await turn.actions.answer(turn, responder, CommandReply(
            f"{len(opened)} open: {'; '.join(opened) or 'none'}"), stop_reason="tickets")]


DESK = Desk("T")


def _build(context: FeatureContext) -> FeatureParts:
    assert isinstance(context.options, TicketSettings)
    DESK.prefix = context.options.prefix

    async def ticket(request: CommandRequest) -> CommandReply:
        number = DESK.open(request.message.conversation_id, request.call.args)
        return CommandReply(f"Opened {number}.")

    def open_ticket_for(turn: TurnContext) -> Tool:
        async def open_ticket(summary: str) -> str:
            """Open a support ticket for this conversation."""
            number = DESK.open(turn.conversation_id, summary)
            return f"Opened {number}."
        return function_tool(open_ticket)

    return FeatureParts(commands=(Command("ticket", "Open a support ticket", ticket,
                                          usage="TEXT"),),
                        turn_tools=(open_ticket_for,), stages={"status": StatusStage()})


FEATURE = Feature(name="tickets", build=_build, settings=TicketSettings)


def registered_in(site: Path) -> Path:
    """A distribution in `site` (a folder to put on the path) that registers this feature."""
    return entry_point_package(site, distribution="threadline-tickets",
                               group="threadline.features", name="tickets",
                               value=f"{__name__}:FEATURE")
