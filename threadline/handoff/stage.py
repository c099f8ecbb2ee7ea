"""The `handoff` stage: in a conversation handed to people, nobody answers.

The turn is recorded, marked as said during the handoff (`HandoffDesk.screen`), and left
unanswered: a person's message and a schedule's turn alike. Commands come before it, so
`/bot on` (and `/human` again) still work while people answer.
"""

from __future__ import annotations

from threadline.handoff.desk import HandoffDesk
from threadline.stages import Next, Turn
from threadline.turn import AgentResult


class HandoffStage:
    """Keeps the bot quiet in handed-off conversations; see the module docstring."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    def __init__(self, desk: HandoffDesk) -> None:
        self.desk = desk

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        quiet = await self.desk.screen(turn.message)
        if quiet is None:
            return await call_next(turn)
        await turn.actions.record(quiet)  # said while people answer: kept, not answered
        return []
