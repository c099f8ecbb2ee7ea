"""Daily token budgets per agent, conversation and person, checked before the model is asked.

Why it exists: a busy group channel with several agents can burn a model budget in an
afternoon; people who run bots want a cap that holds across every replica, and the person who
hits it should hear, kindly, when they can ask again rather than meet silence.

Before a turn, its estimated spend (the agent's reply limit plus its prompt budget) is reserved
in the shared ledger on each capped row; when any row has reached its cap the turn is answered
with a friendly reply saying when the budget resets, and the model is not called. After the
turn, the reservation is settled with what the provider reported (input, cache and output
tokens) and an estimated cost, together with what other model calls made for the turn cost
(a rolling summary written while the prompt was assembled: see `MeteredProvider`); in a team,
in the transaction that records the delivered reply (`threadline.after_delivery`). A ledger
that cannot be reached does not silence the bot: the turn is answered and the failure logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import datetime
from functools import partial

from threadline.agents.llm import ModelProvider, ModelRequest, ModelResponse, ModelUsage
from threadline.errors import StoreError
from threadline.interceptors.base import CallNext
from threadline.spend.budget import DailyBudgets, Price, SpendDay
from threadline.spend.ledger import (
    Charge,
    Refusal,
    Settlement,
    Spend,
    SpendLedger,
    SpendTotals,
)
from threadline.turn import AgentResult, TurnAgent, TurnContext

STOP_REASON = "budget_exhausted"
_BUDGET = {"agent": "My daily budget for answers",
           "conversation": "This conversation's daily budget for answers",
           "person": "Your daily budget for answers"}
# Called with the agent's name and its row's new totals after every settled turn.
SpendListener = Callable[[str, SpendTotals], None]


# Spend of model calls made for the current turn besides the agent's own (its summaries).
_SIDE_SPEND: ContextVar[list[Spend] | None] = ContextVar("threadline_side_spend", default=None)


class MeteredProvider:
    """A provider whose calls are charged to the turn they are made for (a summarizer's).

    Outside a turn of a `SpendLimitInterceptor` the calls are not counted.
    """

    def __init__(self, provider: ModelProvider, price: Price | None = None) -> None:
        self.provider = provider
        self.price = price

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.provider.complete(request)
        spent = _SIDE_SPEND.get()
        if spent is not None:
            spent.append(spend_of(response.usage, self.price))
        return response


def person_subject(context: TurnContext) -> str | None:
    """The person a turn is charged to (None for an agent's turn: no person asked)."""
    participant = context.inbound.participant
    if participant.kind != "user":
        return None
    return f"{context.inbound.metadata.channel_type}:{participant.id}"


def spend_of(usage: ModelUsage, price: Price | None) -> Spend:
    return Spend(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 cache_read_tokens=usage.cache_read_input_tokens,
                 cache_write_tokens=usage.cache_creation_input_tokens,
                 cost=price.cost(usage) if price is not None else 0.0)


class SpendLimitInterceptor:
    """Enforces `budgets` and records every turn's spend in `ledger`; see the module docstring.

    `prices` are by agent name (agents without one cost 0); `model_prices`, by (agent, model),
    price the tokens each of an agent's models spent (a fallback's own price). `reserve`
    overrides the per-turn estimate held while a turn runs. `on_spend` hears each agent's new
    daily totals.
    """

    def __init__(
        self,
        ledger: SpendLedger,
        *,
        budgets: DailyBudgets,
        day: SpendDay | None = None,
        prices: Mapping[str, Price] | None = None,
        model_prices: Mapping[tuple[str, str], Price] | None = None,
        reserve: int | None = None,
        on_spend: SpendListener | None = None,
    ) -> None:
        self.ledger = ledger
        self.budgets = budgets
        self.day = day or SpendDay()
        self.prices = dict(prices or {})
        self.model_prices = dict(model_prices or {})
        self.reserve = reserve
        self.on_spend = on_spend

    def charges(self, context: TurnContext) -> list[Charge]:
        """The rows this turn is charged to, each with its cap."""
        budgets = self.budgets
        found = [Charge("agent", context.agent.name, budgets.for_agent(context.agent.name)),
                 Charge("conversation", context.conversation_id, budgets.per_conversation)]
        person = person_subject(context)
        if person is not None:
            found.append(Charge("person", person, budgets.per_person))
        return found

    def estimate(self, agent: TurnAgent) -> int:
        """What one turn is held to spend until it reports: its prompt budget and reply limit."""
        if self.reserve is not None:
            return self.reserve
        return agent.assembler_options.token_budget + agent.max_tokens

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        day, resets = self.day.today()
        charges = self.charges(context)
        reserved = self.estimate(context.agent) if self.budgets.any else 0
        if reserved:
            try:
                refusal = await self.ledger.reserve(day=day, charges=charges, tokens=reserved)
            except StoreError as exc:
                context.log.warning("spend.unchecked", error=str(exc))
                refusal, reserved = None, 0
            if refusal is not None:
                return self._refuse(context, refusal, resets)
        spend = Spend()
        side: list[Spend] = []
        token = _SIDE_SPEND.set(side)
        try:
            result = await call_next()
            spend = self._spent(context.agent.name, result)
            return result
        finally:
            _SIDE_SPEND.reset(token)
            spend = sum(side, spend)
            settlement = Settlement(self.ledger, day, tuple(charges), reserved, spend,
                                    partial(self._heard, context, spend))
            if context.after_delivery is not None:
                # The pipeline writes it with the delivered reply, in one transaction; it
                # settles it on every path, a failed or cancelled turn's too.
                context.after_delivery.owe(settlement)
            else:
                # Shielded: a cancelled turn still gives its reservation back.
                await asyncio.shield(settlement.settle())

    def _spent(self, agent: str, result: AgentResult) -> Spend:
        """The turn's spend, each model's tokens at that model's price."""
        default = self.prices.get(agent)
        if not result.usage_by_model:
            return spend_of(result.usage, default)
        return sum((spend_of(usage, self.model_prices.get((agent, model), default))
                    for model, usage in result.usage_by_model.items()), Spend())

    def _heard(self, context: TurnContext, spend: Spend,
               outcome: list[SpendTotals] | StoreError) -> None:
        """A settled turn's new totals for `on_spend`, or the error that kept it unrecorded."""
        if isinstance(outcome, StoreError):
            context.log.warning("spend.unrecorded", error=str(outcome), tokens=spend.tokens)
        elif self.on_spend is not None:
            self.on_spend(context.agent.name, outcome[0])  # the agent row sorts first

    def _refuse(self, context: TurnContext, refusal: Refusal, resets: datetime
                ) -> AgentResult:
        charge = refusal.charge
        context.log.warning("spend.budget_reached", scope=charge.scope, subject=charge.subject,
                            spent=refusal.spent_tokens, reserved=refusal.reserved_tokens,
                            cap=charge.cap, participant=context.inbound.participant.id)
        budget = _BUDGET[charge.scope]
        cap = charge.cap or 0
        if refusal.spent_tokens >= cap:
            text = (f"{budget} is used up ({refusal.spent_tokens:,} of {cap:,} tokens). It "
                    f"resets {self.day.describe_reset(resets)}.")
        else:
            text = (f"{budget} is nearly used up and other answers are still in progress. "
                    "Please try again in a minute.")
        return context.agent.reply_result(context, text, stop_reason=STOP_REASON)
