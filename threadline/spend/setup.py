"""The `spend:` settings as the spend interceptor, its metrics and a line for `check`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from threadline.agents.llm import ModelProvider
from threadline.errors import ConfigError
from threadline.spend.budget import DailyBudgets, Price, SpendDay
from threadline.spend.ledger import SpendTotals
from threadline.spend.limit import MeteredProvider, SpendLimitInterceptor

if TYPE_CHECKING:
    from threadline.backends.base import Backend
    from threadline.config import Settings
    from threadline.ops import Metrics
    from threadline.provider_setup import Providers


def budgets(settings: Settings) -> DailyBudgets:
    spend = settings.spend
    return DailyBudgets(per_agent=spend.per_agent_daily_tokens,
                        per_conversation=spend.per_conversation_daily_tokens,
                        per_person=spend.per_person_daily_tokens,
                        agents=dict(spend.agent_daily_tokens))


def price_for(settings: Settings, provider: str, model: str) -> Price | None:
    """The configured price of `model` on a provider type: "provider/model", else "model"."""
    entry = settings.spend.prices.get(f"{provider}/{model}") or settings.spend.prices.get(model)
    return Price(**entry.model_dump()) if entry is not None else None


def metered(settings: Settings) -> Callable[[ModelProvider, str, str], ModelProvider]:
    """Wraps a provider whose calls are charged to the turn they serve (summaries)."""

    def wrap(provider: ModelProvider, plug: str, model: str) -> ModelProvider:
        return MeteredProvider(provider, price_for(settings, plug, model))

    return wrap


def build_spend_limit(settings: Settings, backend: Backend, providers: Providers,
                      metrics: Metrics) -> SpendLimitInterceptor | None:
    """The interceptor that enforces the budgets and records spend into `metrics`; None when
    the backend keeps no spend ledger (said at start), a `ConfigError` if budgets are set."""
    limits = budgets(settings)
    if backend.spend is None:
        if limits.per_agent or limits.per_conversation or limits.per_person:
            raise ConfigError(f"spend: daily budgets are set but backend {backend.name} keeps "
                              "no spend ledger; use a store that does (sqlite or postgresql) "
                              "or remove the budgets")
        return None
    prices = {}
    model_prices = {}
    for agent, chosen in providers.agents.items():
        price = price_for(settings, chosen.provider.plug.name, chosen.model)
        if price is not None:
            prices[agent] = price
        for model in chosen.chain:
            price = price_for(settings, model.provider.plug.name, model.model)
            if price is not None:
                model_prices[agent, model.model] = price
    for scope, cap in (("agent", limits.per_agent), ("conversation", limits.per_conversation),
                       ("person", limits.per_person)):
        if cap is not None:
            metrics.budget.labels(scope).set(cap)

    def publish(agent: str, totals: SpendTotals) -> None:
        metrics.record_spend(agent, totals.spent.tokens, totals.spent.cost)

    return SpendLimitInterceptor(
        backend.spend, budgets=limits, day=SpendDay(settings.spend.timezone), prices=prices,
        model_prices=model_prices,
        reserve=settings.spend.reserve_per_turn, on_spend=publish)


async def publish_today(settings: Settings, backend: Backend, metrics: Metrics) -> None:
    """Today's spend per agent into the metrics at start (each turn updates them after)."""
    if backend.spend is None:
        return
    day, _ = SpendDay(settings.spend.timezone).today()
    for row in await backend.spend.totals(day=day, scope="agent"):
        metrics.record_spend(row.subject, row.spent.tokens, row.spent.cost)


async def spend_today(settings: Settings, backend: Backend) -> str:
    """Today's spend per agent against its budget, one line (for `threadline check`)."""
    if backend.spend is None:
        return f"not kept (backend {backend.name} keeps no spend ledger)"
    day_clock = SpendDay(settings.spend.timezone)
    day, _ = day_clock.today()
    rows = await backend.spend.totals(day=day, scope="agent")
    limits = budgets(settings)
    parts = [f"{row.subject} {row.spent.tokens:,}"
             + (f" of {cap:,}" if (cap := limits.for_agent(row.subject)) else "")
             + (f" (~{_dollars(row.spent.cost)})" if row.spent.cost else "") for row in rows]
    tokens = sum(row.spent.tokens for row in rows)
    cost = sum(row.spent.cost for row in rows)
    total = f"{tokens:,} tokens" + (f", ~{_dollars(cost)} estimated" if cost else "")
    where = f"today ({day}, {settings.spend.timezone})"
    return f"{where}: {total}" + (f"; {', '.join(parts)}" if parts else "")


def _dollars(cost: float) -> str:
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"
