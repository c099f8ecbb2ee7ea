"""Interceptors: order, short-circuits, friendly errors, rate limits and the turn log."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from tests.interceptors.scripted import ANN, BOB, ScriptedModel, say
from threadline.agents.agent import Agent, AgentResult
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.errors import ModelUnavailableError
from threadline.interceptors.base import CallNext, TurnContext
from threadline.interceptors.error_reply import ErrorReplyInterceptor
from threadline.interceptors.rate_limit import Rate, RateLimitInterceptor
from threadline.interceptors.turn_log import TurnLogInterceptor


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as sql_store:
        yield sql_store


class Tracer:
    """Records when it runs relative to the turn."""

    def __init__(self, name: str, trail: list[str]) -> None:
        self.name, self.trail = name, trail

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        self.trail.append(f"{self.name} before")
        result = await call_next()
        self.trail.append(f"{self.name} after")
        return result


async def test_interceptors_run_in_order_around_the_turn_after_capture(
    store: SqlConversationStore,
) -> None:
    trail: list[str] = []

    async def reply(request: ModelRequest) -> ModelResponse:
        # Capture ran first: the inbound turn is already stored when the model is called.
        trail.append(f"model sees {await store.count('c1')} stored turn(s)")
        return ModelResponse(text="hi")

    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(reply),
                  interceptors=[Tracer("outer", trail), Tracer("inner", trail)])
    await agent.invoke(say("hello", conversation_id="c1"))
    assert trail == ["outer before", "inner before", "model sees 1 stored turn(s)",
                     "inner after", "outer after"]


async def test_an_interceptor_can_answer_instead_of_the_model(store: SqlConversationStore) -> None:
    async def closed_on_sunday(context: TurnContext, call_next: CallNext) -> AgentResult:
        return context.agent.reply_result(context, "We are closed today.", stop_reason="closed")

    model = ScriptedModel()
    agent = Agent(name="support", conversation_history=store, provider=model,
                  interceptors=[closed_on_sunday])
    result = await agent.invoke(say("open?", conversation_id="c1"))
    assert result.output == "We are closed today." and model.requests == []
    assert [m.content for m in await store.get("c1")] == ["open?", "We are closed today."]


async def test_a_model_outage_gets_a_friendly_reply_and_a_logged_exception(
    store: SqlConversationStore,
) -> None:
    def down(request: ModelRequest) -> ModelResponse:
        raise ModelUnavailableError("Anthropic API overloaded (529) after 3 retries")

    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(down),
                  interceptors=[ErrorReplyInterceptor()])
    with capture_logs() as logs:
        result = await agent.invoke(say("help", conversation_id="c1"))

    assert result.output == ("Sorry, I could not answer that just now (the model is "
                             "unavailable). Please try again in a minute.")
    assert result.stop_reason == "error"
    failed = [e for e in logs if e["event"] == "turn.failed"]
    assert failed and failed[0]["conversation_id"] == "c1" and failed[0]["agent"] == "support"
    assert failed[0]["exc_info"] is True
    assert [m.participant.kind for m in await store.get("c1")] == ["user", "agent"]


async def test_without_an_error_interceptor_the_failure_reaches_the_caller(
    store: SqlConversationStore,
) -> None:
    def down(request: ModelRequest) -> ModelResponse:
        raise ModelUnavailableError("overloaded")

    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(down))
    with pytest.raises(ModelUnavailableError):
        await agent.invoke(say("help", conversation_id="c1"))
    assert await store.count("c1") == 1  # the question is kept even though nobody answered


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_user_over_the_limit_gets_a_polite_reply_and_others_are_unaffected(
    store: SqlConversationStore,
) -> None:
    clock = FakeClock()
    model = ScriptedModel()
    limiter = RateLimitInterceptor(per_user=Rate(2, 60.0), per_conversation=None, clock=clock)
    agent = Agent(name="support", conversation_history=store, provider=model,
                  interceptors=[limiter])
    ann = [await agent.invoke(say(f"q{i}", who=ANN, conversation_id="c1")) for i in range(3)]
    bob = await agent.invoke(say("bob here", who=BOB, conversation_id="c1"))

    assert [r.stop_reason for r in ann] == ["end_turn", "end_turn", "rate_limited"]
    assert "faster than I can answer" in ann[2].output
    assert bob.stop_reason == "end_turn"
    assert len(model.requests) == 3
    clock.now += 30.0  # half the window refills one turn for Ann
    assert (await agent.invoke(say("q3", who=ANN, conversation_id="c1"))).stop_reason == "end_turn"


async def test_a_busy_conversation_is_limited_and_can_be_dropped_silently(
    store: SqlConversationStore,
) -> None:
    limiter = RateLimitInterceptor(per_user=None, per_conversation=Rate(1, 60.0), reply=None,
                                   clock=FakeClock())
    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(),
                  interceptors=[limiter])
    await agent.invoke(say("first", conversation_id="c1"))
    with capture_logs() as logs:
        dropped = await agent.invoke(say("second", conversation_id="c1"))
    other = await agent.invoke(say("elsewhere", conversation_id="c2"))

    assert dropped.outbound is None and dropped.output == ""
    assert dropped.stop_reason == "rate_limited" and other.stop_reason == "end_turn"
    limited = [e for e in logs if e["event"] == "turn.rate_limited"]
    assert limited[0]["action"] == "dropped" and limited[0]["limit"] == "per_conversation"
    assert limited[0]["conversation_id"] == "c1"
    # The dropped question is still in the history; it just got no answer.
    assert [m.content for m in await store.get("c1")][-1] == "second"


async def test_each_turn_is_logged_with_who_where_tokens_and_latency(
    store: SqlConversationStore,
) -> None:
    model = ScriptedModel(lambda r: ModelResponse(text="ok"))
    agent = Agent(name="support", conversation_history=store, provider=model,
                  interceptors=[TurnLogInterceptor()])
    with capture_logs() as logs:
        await agent.invoke(say("hello", who=BOB, conversation_id="c7"))
    done = [e for e in logs if e["event"] == "turn.done"]
    assert len(done) == 1
    entry = done[0]
    assert (entry["conversation_id"], entry["agent"], entry["participant"]) == (
        "c7", "support", "U_BOB")
    assert entry["model_calls"] == 1 and entry["stop_reason"] == "end_turn"
    assert entry["latency_ms"] >= 0 and entry["prompt_tokens"] > 0
