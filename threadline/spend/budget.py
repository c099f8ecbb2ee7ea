"""Daily token budgets, the day they belong to, and prices for an estimated cost.

A day starts at midnight in the configured time zone (UTC unless set), so every process agrees
on which day's row a turn is charged to and when a budget resets. Prices come only from the
configuration, in US dollars per million tokens: Threadline ships none, so none go stale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from threadline.errors import ConfigError
from threadline.turn import ModelUsage


@dataclass(frozen=True, slots=True)
class DailyBudgets:
    """Tokens a day (input, cache and output, as the provider reports them); None: no cap.

    `per_agent` is every agent's cap; `agents` gives some agents their own.
    """

    per_agent: int | None = None
    per_conversation: int | None = None
    per_person: int | None = None
    agents: Mapping[str, int] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return bool(self.agents) or any(cap is not None for cap in (
            self.per_agent, self.per_conversation, self.per_person))

    def for_agent(self, name: str) -> int | None:
        return self.agents.get(name, self.per_agent)


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens of each kind."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: ModelUsage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_read_input_tokens * self.cache_read
                + usage.cache_creation_input_tokens * self.cache_write) / 1_000_000


class SpendDay:
    """Which day it is for budgets, and when the next one starts, in one time zone."""

    def __init__(self, timezone: str = "UTC", *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        try:
            self.zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(f"spend.timezone: unknown time zone {timezone!r}; use an IANA "
                              "name such as UTC or Europe/Berlin") from exc
        self.timezone = timezone
        self.clock = clock

    def today(self) -> tuple[str, datetime]:
        """The day's key (its date, YYYY-MM-DD) and the moment the next day starts."""
        local = self.clock().astimezone(self.zone)
        midnight = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(),
                                    tzinfo=self.zone)
        return local.date().isoformat(), midnight

    def describe_reset(self, resets: datetime) -> str:
        """'at 00:00 UTC (in 3 h 12 min)': when a budget resets, for a chat reply."""
        left = max(resets - self.clock(), timedelta(0))
        minutes = max(math.ceil(left.total_seconds() / 60), 1)
        hours, minutes = divmod(minutes, 60)
        wait = f"{hours} h {minutes} min" if hours else f"{minutes} min"
        return f"at 00:00 {self.timezone} (in {wait})"
