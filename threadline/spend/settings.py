"""Spend settings: prices and daily budgets (`spend:`)."""

from __future__ import annotations

from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    Field,
    field_validator,
)

from threadline.settings_section import Section


class PriceSettings(Section):
    """US dollars per million tokens of each kind (from the provider's price list)."""

    input: float = Field(default=0.0, ge=0)
    """US dollars per million input tokens."""
    output: float = Field(default=0.0, ge=0)
    """US dollars per million output tokens."""
    cache_read: float = Field(default=0.0, ge=0)
    """US dollars per million tokens read from the prompt cache."""
    cache_write: float = Field(default=0.0, ge=0)
    """US dollars per million tokens written to the prompt cache."""


class SpendSettings(Section):
    """Daily token budgets (unset: no cap) and prices for an estimated cost.

    A budget counts every token a provider reports (input, cache reads and writes, output) and
    resets at midnight in `timezone`. `prices` are keyed "provider/model" (e.g.
    "anthropic/claude-sonnet-5-5") or just the model; there are no built-in prices.
    """

    timezone: str = "UTC"
    """The IANA time zone whose midnight resets the daily budgets."""
    per_agent_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens each agent may use a day, across all conversations (unset: no cap)."""
    per_conversation_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens all agents together may use a day in one conversation (unset: no cap)."""
    per_person_daily_tokens: int | None = Field(default=None, gt=0)
    """Tokens all agents together may use a day answering one person (unset: no cap)."""
    agent_daily_tokens: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    """Agents with a daily cap of their own instead of per_agent_daily_tokens, by name."""
    reserve_per_turn: int | None = Field(default=None, gt=0)
    """Tokens held for a turn in flight before the model is called (default: its prompt budget plus
    its reply limit)."""
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    """Prices for the estimated cost in /metrics and check, keyed "provider/model" or "model"; none
    are built in."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, timezone: str) -> str:
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {timezone!r}; write an IANA name such as UTC "
                             "or Europe/Berlin") from None
        return timezone
