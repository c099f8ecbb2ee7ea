"""Daily token budgets: a capped conversation, person or agent gets a kind reply, no model call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.interceptors.scripted import ANN, BOB, ScriptedModel, say
from threadline.agents.agent import Agent, Memory
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.agents.summarizer import SummarizerAgent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.history.assembler import AssemblerOptions
from threadline.spend import DailyBudgets, Price, SpendDay
from threadline.spend.limit import (
    STOP_REASON,
    MeteredProvider,
    SpendLimitInterceptor,
)


class Clock:
    """A clock the test moves (budgets reset at midnight)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def costly(request: ModelRequest) -> ModelResponse:
    # 300 fresh input, 100 read from the cache, 50 written to it, 50 output: 500 a call.
    return ModelResponse(text="noted", usage=ModelUsage(
        input_tokens=300, output_tokens=50, cache_read_input_tokens=100,
        cache_creation_input_tokens=50))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as opened:
        yield opened


def agent_with(store: SqlConversationStore, model: ScriptedModel, limit: SpendLimitInterceptor,
               name: str = "support") -> Agent:
    return Agent(name=name, conversation_history=store, provider=model, interceptors=[limit])


async def test_a_conversation_past_its_daily_budget_is_told_when_it_resets(
        store: SqlConversationStore) -> None:
    clock = Clock(datetime(2026, 3, 5, 20, 47, tzinfo=UTC))
    model = ScriptedModel(costly)
    limit = SpendLimitInterceptor(SqlSpendLedger(store), budgets=DailyBudgets(per_conversation=900),
                                  day=SpendDay(clock=clock), reserve=100)
    agent = agent_with(store, model, limit)
    results = [await agent.invoke(say(f"@support question {n}")) for n in range(3)]
    await agent.close()

    assert len(model.requests) == 2  # the third turn never reached the model
    assert [r.stop_reason for r in results] == ["end_turn", "end_turn", STOP_REASON]
    assert results[2].output == ("This conversation's daily budget for answers is used up "
                                 "(1,000 of 900 tokens). It resets at 00:00 UTC (in 3 h 13 min).")
    stored = await store.get("local:room")
    assert [m.content for m in stored][-2:] == ["@support question 2", results[2].output]
    [row] = await SqlSpendLedger(store).totals(day="2026-03-05", scope="conversation")
    assert (row.spent.tokens, row.reserved_tokens, row.turns) == (1000, 0, 2)
    assert (row.spent.input_tokens, row.spent.cache_read_tokens,
            row.spent.cache_write_tokens, row.spent.output_tokens) == (600, 200, 100, 100)


async def test_the_budget_resets_at_midnight_in_the_configured_zone(
        store: SqlConversationStore) -> None:
    # 22:59 UTC is 23:59 in Berlin in winter: one minute before Berlin's new day.
    clock = Clock(datetime(2026, 1, 10, 22, 59, tzinfo=UTC))
    model = ScriptedModel(costly)
    limit = SpendLimitInterceptor(SqlSpendLedger(store), budgets=DailyBudgets(per_conversation=500),
                                  day=SpendDay("Europe/Berlin", clock=clock), reserve=100)
    agent = agent_with(store, model, limit)
    first = await agent.invoke(say("@support one"))
    refused = await agent.invoke(say("@support two"))
    clock.now += timedelta(minutes=2)  # 00:01 in Berlin
    after = await agent.invoke(say("@support three"))
    await agent.close()

    assert (first.stop_reason, refused.stop_reason, after.stop_reason) == (
        "end_turn", STOP_REASON, "end_turn")
    assert "It resets at 00:00 Europe/Berlin (in 1 min)." in refused.output
    assert len(model.requests) == 2
    ledger = SqlSpendLedger(store)
    assert [r.spent.tokens for r in await ledger.totals(day="2026-01-10", scope="agent")] == [500]
    assert [r.spent.tokens for r in await ledger.totals(day="2026-01-11", scope="agent")] == [500]


async def test_a_person_budget_spans_conversations_and_spares_others(
        store: SqlConversationStore) -> None:
    model = ScriptedModel(costly)
    limit = SpendLimitInterceptor(SqlSpendLedger(store), budgets=DailyBudgets(per_person=500),
                                  reserve=100)
    agent = agent_with(store, model, limit)
    ann_first = await agent.invoke(say("@support hi", who=ANN, conversation_id="local:a"))
    ann_elsewhere = await agent.invoke(say("@support hi", who=ANN, conversation_id="local:b"))
    bob = await agent.invoke(say("@support hi", who=BOB, conversation_id="local:b"))
    await agent.close()

    assert [r.stop_reason for r in (ann_first, ann_elsewhere, bob)] == [
        "end_turn", STOP_REASON, "end_turn"]
    assert ann_elsewhere.output.startswith("Your daily budget for answers is used up "
                                           "(500 of 500 tokens).")


async def test_an_agent_budget_caps_that_agent_only(store: SqlConversationStore) -> None:
    model = ScriptedModel(costly)
    budgets = DailyBudgets(per_agent=10_000, agents={"support": 400})  # support's own cap
    limit = SpendLimitInterceptor(SqlSpendLedger(store), budgets=budgets, reserve=100)
    support = agent_with(store, model, limit)
    billing = agent_with(store, model, limit, name="billing")
    answers = [await support.invoke(say("@support a")), await support.invoke(say("@support b")),
               await billing.invoke(say("@billing c"))]
    for agent in (support, billing):
        await agent.close()
    assert [a.stop_reason for a in answers] == ["end_turn", STOP_REASON, "end_turn"]
    assert answers[1].output.startswith("My daily budget for answers is used up")


async def test_a_turn_in_flight_holds_its_reservation(store: SqlConversationStore) -> None:
    """While one turn runs its estimate counts: a turn arriving then finds no room left."""
    ledger = SqlSpendLedger(store)
    limit = SpendLimitInterceptor(ledger, budgets=DailyBudgets(per_conversation=1000),
                                  reserve=1000)
    seen: list[str] = []

    async def nested(request: ModelRequest) -> ModelResponse:
        # Another turn of the same conversation arrives while this one is with the model.
        other = agent_with(store, ScriptedModel(costly), limit, name="billing")
        seen.append((await other.invoke(say("@billing meanwhile"))).output)
        await other.close()
        return costly(request)

    agent = agent_with(store, ScriptedModel(nested), limit)
    result = await agent.invoke(say("@support first"))
    await agent.close()
    assert result.stop_reason == "end_turn"
    assert seen == ["This conversation's daily budget for answers is nearly used up and other "
                    "answers are still in progress. Please try again in a minute."]
    [row] = await ledger.totals(day=SpendDay().today()[0], scope="conversation")
    assert (row.spent.tokens, row.reserved_tokens, row.turns) == (500, 0, 1)


async def test_cost_is_estimated_from_the_configured_price(store: SqlConversationStore) -> None:
    heard: list[tuple[str, int, float]] = []
    limit = SpendLimitInterceptor(
        SqlSpendLedger(store), budgets=DailyBudgets(),
        prices={"support": Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)},
        on_spend=lambda agent, totals: heard.append((agent, totals.spent.tokens,
                                                     totals.spent.cost)))
    agent = agent_with(store, ScriptedModel(costly), limit)
    await agent.invoke(say("@support hi"))
    await agent.close()
    [(name, tokens, cost)] = heard
    assert (name, tokens) == ("support", 500)
    assert cost == pytest.approx((300 * 3.0 + 50 * 15.0 + 100 * 0.3 + 50 * 3.75) / 1e6)


async def test_summaries_written_for_a_turn_count_against_its_budgets(
        store: SqlConversationStore) -> None:
    def summarize(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="Summary: Ann asked several questions.",
                             usage=ModelUsage(input_tokens=1000, output_tokens=100))

    summary_model = ScriptedModel(summarize)
    limit = SpendLimitInterceptor(SqlSpendLedger(store), budgets=DailyBudgets())
    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(costly),
                  interceptors=[limit], memory=Memory(
                      options=AssemblerOptions(rolling_summary_threshold=4),
                      summarizer=SummarizerAgent(MeteredProvider(summary_model, Price(input=1.0)),
                                                 model="cheap")))
    for n in range(6):
        await agent.invoke(say(f"@support question {n}"))
    await agent.close()

    assert summary_model.requests  # the conversation grew past the threshold
    [row] = await SqlSpendLedger(store).totals(day=SpendDay().today()[0], scope="conversation")
    assert row.spent.tokens == 6 * 500 + len(summary_model.requests) * 1100
    assert row.spent.cost == pytest.approx(len(summary_model.requests) * 1000 / 1e6)
