"""The `schedules` stage: a schedule's turn is posted as written, or its prompt answered.

A `message` schedule posts its text with no model; a `prompt` schedule is answered by its agent
with the conversation's history, posted whole (never shown while written). Either goes through
the reply ledger, once. A slot whose successor is due already is given up (a recurring post
never piles up). It runs after the policy stages: a schedule set by someone a list keeps out,
or in a conversation handed to people, is not answered.
"""

from __future__ import annotations

from dataclasses import replace

from threadline.commands.registry import CommandReply
from threadline.schedules.clock import Clock, SystemClock
from threadline.stages import Next, Turn
from threadline.turn import AgentResult


class ScheduleStage:
    """Claims schedules' turns; see the module docstring."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        due = turn.scheduled
        if due is None:
            return await call_next(turn)
        bound = turn.log.bind(schedule_id=due.schedule_id, agent=due.agent)
        agent = turn.actions.agents.get(due.agent)
        if agent is None:
            bound.error("pipeline.schedule_without_agent",
                        detail=f"schedule {due.schedule_id} is for agent {due.agent!r}, which "
                               "this deployment does not run; cancel it or add the agent")
            return []
        if due.agent in turn.refused:
            return []  # a policy stage said why
        if due.expires is not None and self.clock.now() >= due.expires:
            bound.warning("pipeline.schedule_slot_passed", expires=due.expires.isoformat())
            return []
        turn = replace(turn, log=bound)
        if due.kind == "prompt":
            prompt = await turn.actions.record(turn.message)  # the agent's prompt, in the history
            if prompt is None:
                return []
            result = await turn.actions.run_agent(agent, prompt, turn, reason="schedule",
                                                  whole=True)
            return [result] if result is not None else []
        result = await turn.actions.answer(turn, agent, CommandReply(
            due.text, {"schedule": due.schedule_id}), stop_reason="scheduled")
        bound.info("pipeline.schedule_posted", delivered=len(result.delivered_ids))
        return [result]
