"""What the assembler hands an agent: provider-neutral prompt messages and their figures."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from threadline.history.model import ToolExchange

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class PromptImage:
    """An image shown to a model that sees: its bytes and their sniffed media type."""

    media_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One prompt turn from an agent's point of view.

    Readable as attributes or as a mapping (`m.role`, `m["content"]`). `tool_exchanges` appear
    only on the agent's own assistant turns: each is a call and its result, kept together. A
    stored turn's text is what the agent said after its tools; `in_round` marks a round of the
    turn being answered, whose text was written before its calls (with the reasoning the
    provider must send back), so converters put each text where the model wrote it.
    `cache_point` marks a turn meant to stand byte-identical, at the same place, over the
    next turns (a kept recall block): a provider may end a cached prefix after it.
    `part` names the part of the prompt a feature's block is (the knowledge block:
    "knowledge"), as the reply record and the console show it.
    """

    role: Role
    content: str
    tool_exchanges: tuple[ToolExchange, ...] = ()
    in_round: bool = False
    images: tuple[PromptImage, ...] = ()
    cache_point: bool = False
    part: str | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in ("role", "content", "tool_exchanges"):
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> Iterator[str]:
        yield from ("role", "content")


@dataclass(slots=True)
class AssembledPrompt:
    """The assembled prompt and an account of what was done to build it.

    `context_ids` are turns kept as immediate context (said just before the answered turn,
    not addressed to the agent); they are among `included_ids`. `forgotten_through` is the
    last sequence the agent was asked to forget (`/forget`): nothing at or before it is shown,
    recalled or found by the search tool.
    """

    messages: list[PromptMessage]
    token_count: int
    included_ids: list[str] = field(default_factory=list)
    dropped_for_budget_ids: list[str] = field(default_factory=list)
    filtered_ids: list[str] = field(default_factory=list)
    recalled_ids: list[str] = field(default_factory=list)
    # The recalled turns the search matched (the others stand around them), best match first.
    recall_hit_ids: list[str] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    # The person's own turns from other conversations shown (person memory).
    elsewhere_ids: list[str] = field(default_factory=list)
    summary_used: bool = False
    summary_created: bool = False
    notes: list[str] = field(default_factory=list)
    forgotten_through: int | None = None
    # What a feature's grounding block shows (the knowledge sections), one mapping each.
    grounded: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def shown_ids(self) -> list[str]:
        """Every stored turn the prompt shows: kept and recalled (the search tool skips them)."""
        return [*self.included_ids, *self.recalled_ids]
