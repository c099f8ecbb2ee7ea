"""The `ambient` stage: agents that listen in a room and speak only when they decide to.

The turns nobody addressed to an agent are kept as context, as always (the pipeline stores
them). An ambient agent also counts the new turns of people in each conversation of its
channels; after `every_turns` of them, and at most once every `min_minutes`, it is asked
cheaply whether to speak (`decision`: a short prompt, a one-line answer). When it decides to,
and it has spoken fewer than `max_replies_per_hour` times in the last hour there, it answers
the turn that tipped it, through the pipeline's one reply path (the ledger keeps that reply
from being posted twice). The decision, spoken or not and why, is logged (`ambient.decided`)
and is in the agent's reply records (its observer's, the inspector's): a reply spoken says
`ambient: spoke: WHY` as why it answered (and keeps the decision in its metadata,
`extra["ambient"]`); a decision to stay quiet is a record of its own for the turn that was
asked about, `ambient: stayed quiet: WHY`, with no reply, stop reason `quiet`, the question
asked (its turns as the prompt's included ids), its answer and its tokens.

Turns of bots and agents never count and never start a question: an agent's reply cannot
set off another ambient agent, so two of them cannot talk to each other in a loop. A turn
that addresses the agent is answered as usual and starts its count again.

The counts live in this process (the process that owns a conversation takes its turns): a
restart starts them again, which costs at most one question more.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import structlog

from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.ambient.decision import Decision, failed, question, read_decision
from threadline.ambient.settings import AmbientAgent
from threadline.errors import ModelError
from threadline.history.addressing import from_bot
from threadline.history.model import StoredMessage
from threadline.history.prompt import AssembledPrompt
from threadline.history.tokens import message_tokens
from threadline.interceptors.base import CallNext
from threadline.stages import Next, Turn
from threadline.tracing import spans as tracing
from threadline.turn import AgentResult, TurnContext

log = structlog.get_logger("threadline.ambient")

MAX_CONVERSATIONS = 50_000
HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class _Asked:
    """The question put to the model and what came of it (kept in a quiet decision's record)."""

    request: ModelRequest
    turns: Sequence[StoredMessage]
    response: ModelResponse | None
    error: ModelError | None
    seconds: float


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
        asked = await self._question(turn, agent, ambient)
        decision = (failed(asked.error) if asked.error is not None
                    else read_decision(asked.response.text if asked.response else ""))
        while heard.spoke_at and now - heard.spoke_at[0] > HOUR:
            heard.spoke_at.popleft()
        if decision.speak and len(heard.spoke_at) >= ambient.max_replies_per_hour:
            decision = Decision(False, f"would speak ({decision.why}), but it spoke "
                                       f"{len(heard.spoke_at)} times in the last hour "
                                       f"(max_replies_per_hour {ambient.max_replies_per_hour})")
        turn.log.info("ambient.decided", agent=agent.name, spoke=decision.speak,
                      why=decision.why)
        if not decision.speak:
            _record_quiet(turn, agent, asked, decision)
            return None
        heard.spoke_at.append(now)
        key = (agent.name, turn.message.id)
        self._decided[key] = decision
        try:
            return await turn.actions.run_agent(agent, turn.message, turn,
                                                reason=f"ambient: spoke: {decision.why}")
        finally:
            self._decided.pop(key, None)

    async def _question(self, turn: Turn, agent: Agent, ambient: AmbientAgent) -> _Asked:
        recent = await turn.actions.store.get(turn.message.conversation_id,
                                              limit=ambient.context_turns)
        request = question(name=agent.name, description=agent.description,
                           model=ambient.model or agent.model, turns=recent)
        began = time.perf_counter()
        try:
            with tracing.model_span(request, agent.provider, purpose="ambient") as span:
                response = await agent.provider.complete(request)
                span.answered(response)
        except ModelError as exc:
            return _Asked(request, recent, None, exc, time.perf_counter() - began)
        return _Asked(request, recent, response, None, time.perf_counter() - began)

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


def _record_quiet(turn: Turn, agent: Agent, asked: _Asked, decision: Decision) -> None:
    """A reply record, with no reply, of the agent's decision to stay quiet (through its
    observer, as its turns are recorded; nothing when nobody observes it)."""
    if agent.observer is None:
        return
    message = turn.message
    context = TurnContext(agent=agent, inbound=message, conversation_id=message.conversation_id,
                          store=turn.actions.store, log=turn.log,
                          reason=f"ambient: stayed quiet: {decision.why}",
                          channel=turn.channel_name)
    trace = agent.observer.begin(agent, context)
    trace.prompt_assembled(AssembledPrompt(
        messages=list(asked.request.messages),
        token_count=sum(message_tokens(t) for t in asked.turns),
        included_ids=[t.id for t in asked.turns]), note="ambient: the turns it considered")
    trace.model_called(asked.request, asked.response, latency=asked.seconds, error=asked.error)
    trace.finished(AgentResult(
        agent_name=agent.name, conversation_id=message.conversation_id, output="",
        outbound=None, usage=asked.response.usage if asked.response else ModelUsage(),
        latency=asked.seconds, stop_reason="quiet", model_calls=1))


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
