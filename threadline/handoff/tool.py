"""The `hand_off` tool: the agent hands the conversation it is answering to people.

Made per turn, like the search tool: the conversation and the customer are those of the turn
being answered; the model gives only the reason and a summary for the team.
"""

from __future__ import annotations

from typing import Any

from threadline.agents.tools import input_problem
from threadline.handoff.desk import HandoffDesk
from threadline.turn import TurnContext

_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "description": "Why a person should take over."},
        "summary": {"type": "string", "pattern": r"\S",
                    "description": "What the team needs to know to answer, in a few lines."},
    },
    "required": ["summary"],
    "additionalProperties": False,
}


class HandOffTool:
    """A tool bound to one turn: hands its conversation to people."""

    name = "hand_off"
    description = ("Hand this conversation to a human colleague: the team is told with your "
                   "summary and you stay quiet here until it is given back. Use it when the "
                   "person asks for a human or you cannot help. Then tell them a person will "
                   "answer.")

    def __init__(self, desk: HandoffDesk, context: TurnContext) -> None:
        self._desk = desk
        self._context = context
        self.input_schema: dict[str, Any] = dict(_INPUT_SCHEMA)

    async def run(self, input: dict[str, Any]) -> str:
        problem = input_problem(_INPUT_SCHEMA, input)
        if problem is not None:
            return f"error: {problem}"
        return await self._desk.hand_off(self._context.inbound, channel=self._context.channel,
                                         reason=input.get("reason", ""),
                                         summary=input["summary"])


def hand_off_tool(desk: HandoffDesk) -> Any:
    """The per-turn factory an agent takes in `turn_tools`."""
    return lambda context: HandOffTool(desk, context)
