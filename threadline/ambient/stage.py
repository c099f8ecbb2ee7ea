"""The `ambient` stage: agents that listen in a room and speak only when they decide to.

The turns nobody addressed to an agent are kept as context, as always (the pipeline stores
them). An ambient agent also counts the new turns of people in each conversation of its
channels; after `every_turns` of them, and at most once every `min_minutes`, it is asked
cheaply whether to speak (`decision`: a short prompt, a one-line answer). When it decides to,
and it has spoken fewer than `max_replies_per_hour` times in the last hour there, it answers
the turn that tipped it, through the pipeline's one reply path (the ledger keeps that reply
from being posted twice). The decision, spoken or not and why, is logged
(`ambient.decided`) and kept in the reply's metadata (`extra["ambient"]`) when it spoke.

Turns of bots and agents never count and never start a question: an agent's reply cannot
set off another ambient agent, so two of them cannot talk to each other in a loop. A turn
that addresses the agent is answered as usual and starts its count again.

The counts live in this process (the process that owns a conversation takes its turns): a
restart starts them again, which costs at most one question more.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import structlog

from threadline.agents.agent import Agent
from threadline.ambient.decision import Decision, failed, question, read_decision
from threadline.ambient.settings import AmbientAgent
from threadline.errors import ModelError
from threadline.history.addressing import from_bot
from threadline.interceptors.base import CallNext
from threadline.stages import Next, Turn
from threadline.tracing import spans as tracing
from threadline.turn import AgentResult, TurnContext

log = structlog.get_logger("threadline.ambient")

MAX_CONVERSATIONS = 50_000
HOUR = 3600.0


@dataclass(slots=True)
class _Listening:
    """One ambient agent in one conversation: what it heard since it was last asked."""

    new_turns: int = 0
    asked_at: float | None = None
    spoke_at: deque[float] = field(default_factory=deque)


class AmbientStage:
    """See the module docstring. The agents are attached at start (`AmbientService`)."""

    def __init__(self, settings: Mapping[str, AmbientAgent]) -> None:
        self.settings = settings
        self._listening: OrderedDict[tuple[str, str], _Listening] = OrderedDict()
        self._decided: dict[tuple[str, str], Decision] = {}  # (agent, turn id): why it spoke

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        results = await call_next(turn)
        if (turn.command is not None or turn.scheduled is not None or turn.channel_name is None
                or from_bot(turn.message)):
            return results
        for name, ambient in self.settings.items():
            if turn.channel_name not in ambient.channels or name in turn.refused:
                continue
            agent = turn.actions.agents.get(name)
            if agent is None:
                continue
            heard = self._heard(name, turn.message.conversation_id)
            if name in turn.agents:  # addressed: answered as usual
                heard.new_turns = 0
                continue
            heard.new_turns += 1
            now = time.monotonic()
            if heard.new_turns < ambient.every_turns or (
                    heard.asked_at is not None
                    and now - heard.asked_at < ambient.min_minutes * 60):
                continue
            heard.new_turns, heard.asked_at = 0, now
            spoken = await self._ask(turn, agent, ambient, heard, now)
            if spoken is not None:
                results.append(spoken)
        return results

    async def _ask(self, turn: Turn, agent: Agent, ambient: AmbientAgent,
                   heard: _Listening, now: float) -> AgentResult | None:
        """Ask whether to speak; speak when it says so and the rate allows."""
        decision = await self._decision(turn, agent, ambient)
        while heard.spoke_at and now - heard.spoke_at[0] > HOUR:
            heard.spoke_at.popleft()
        if decision.speak and len(heard.spoke_at) >= ambient.max_replies_per_hour:
            decision = Decision(False, f"would speak ({decision.why}), but it spoke "
                                       f"{len(heard.spoke_at)} times in the last hour "
                                       f"(max_replies_per_hour {ambient.max_replies_per_hour})")
        turn.log.info("ambient.decided", agent=agent.name, spoke=decision.speak,
                      why=decision.why)
        if not decision.speak:
            return None
        heard.spoke_at.append(now)
        key = (agent.name, turn.message.id)
        self._decided[key] = decision
        try:
            return await turn.actions.run_agent(agent, turn.message, turn, reason="ambient")
        finally:
            self._decided.pop(key, None)

    async def _decision(self, turn: Turn, agent: Agent, ambient: AmbientAgent) -> Decision:
        recent = await turn.actions.store.get(turn.message.conversation_id,
                                              limit=ambient.context_turns)
        request = question(name=agent.name, description=agent.description,
                           model=ambient.model or agent.model, turns=recent)
        try:
            with tracing.model_span(request, agent.provider, purpose="ambient") as span:
                response = await agent.provider.complete(request)
                span.answered(response)
        except ModelError as exc:
            return failed(exc)
        return read_decision(response.text)

    def _heard(self, agent: str, conversation_id: str) -> _Listening:
        key = (agent, conversation_id)
        heard = self._listening.pop(key, None) or _Listening()
        self._listening[key] = heard  # most recently heard last
        while len(self._listening) > MAX_CONVERSATIONS:
            self._listening.popitem(last=False)
        return heard

    def decision_for(self, agent: str, turn_id: str) -> Decision | None:
        """Why `agent` is speaking to the turn `turn_id` now (None: it was not asked)."""
        return self._decided.get((agent, turn_id))


class DecisionKept:
    """An interceptor: the reply of an agent that decided to speak keeps why (`ambient`)."""

    def __init__(self, stage: AmbientStage) -> None:
        self.stage = stage

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        result = await call_next()
        decision = self.stage.decision_for(context.agent.name, context.inbound.id)
        if decision is None or result.outbound is None:
            return result
        outbound = result.outbound
        extra = {**outbound.metadata.extra, "ambient": decision.as_record()}
        return replace(result, outbound=replace(
            outbound, metadata=replace(outbound.metadata, extra=extra)))
