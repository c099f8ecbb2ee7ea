"""A team whose one agent's spend is held and settled in the history's own database: the
setup of the tests that follow a turn's spend through the pipeline's writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from tests.interceptors.scripted import Reply, ScriptedModel
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.interceptors.capture import DurableWriter
from threadline.spend import DailyBudgets, SpendDay, SpendTotals
from threadline.spend.limit import SpendLimitInterceptor
from threadline.team import Team

DAY = datetime(2026, 3, 5, 12, tzinfo=UTC)  # every turn's spend is on 2026-03-05
RESERVED = 400  # tokens held on the conversation's row while the model runs


def spending_team(store: SqlConversationStore, reply: Reply, *,
                  on_spend: Callable[[str, SpendTotals], None] | None = None,
                  writer: DurableWriter | None = None) -> tuple[Team, SqlSpendLedger]:
    """The agent `support` answering with `reply`, at most 10,000 tokens a conversation a
    day; the team and the ledger its spend is written to."""
    ledger = SqlSpendLedger(store)
    limit = SpendLimitInterceptor(ledger, budgets=DailyBudgets(per_conversation=10_000),
                                  day=SpendDay(clock=lambda: DAY), reserve=RESERVED,
                                  on_spend=on_spend)
    team = Team([Agent(name="support", conversation_history=store,
                       provider=ScriptedModel(reply), interceptors=[limit])], writer=writer)
    return team, ledger
