"""History processors: composable steps over the turns an agent is about to see.

A processor is any callable `(turns) -> turns` (a function or a small class with `__call__`).
They run in order at three levels, store then channel then agent (the history-processors design
of AgentKit), after addressed-only filtering and before projection. A tool call and its result
are one `ToolExchange` inside one turn, so no processor can separate them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from threadline.errors import ConfigError
from threadline.history.model import StoredMessage, ToolExchange, ToolResult
from threadline.history.store import ConversationStore
from threadline.history.tokens import TokenCounter, default_counter

Processor = Callable[[list[StoredMessage]], list[StoredMessage]]

MASK_NOTE = ("[tool result of {name} ({tokens} tokens) hidden; "
             'retrieve_tool_result(tool_call_id="{id}") shows it]')


def apply_processors(
    turns: list[StoredMessage], processors: Sequence[Processor]
) -> list[StoredMessage]:
    for processor in processors:
        turns = processor(turns)
    return turns


@dataclass(frozen=True)
class ToolCallFilter:
    """Keeps only some tools' activity (or none), optionally leaving a one-line trace.

    `exclude` and `include` are mutually exclusive; with neither, all tool activity is removed.
    With `trace`, a turn that lost tool activity says "(Used name)" instead.
    """

    exclude: Sequence[str] = ()
    include: Sequence[str] | None = None
    trace: bool = False

    def __post_init__(self) -> None:
        if self.exclude and self.include is not None:
            raise ConfigError("ToolCallFilter takes exclude=[...] or include=[...], not both")

    def _keeps(self, exchange: ToolExchange) -> bool:
        if self.include is not None:
            return exchange.call.name in self.include
        if self.exclude:
            return exchange.call.name not in self.exclude
        return False

    def __call__(self, turns: list[StoredMessage]) -> list[StoredMessage]:
        result = []
        for turn in turns:
            kept = tuple(e for e in turn.tool_exchanges if self._keeps(e))
            if len(kept) == len(turn.tool_exchanges):
                result.append(turn)
                continue
            content = turn.content
            if self.trace:
                gone = [e.call.name for e in turn.tool_exchanges if e not in kept]
                content = f"{content}\n(Used {', '.join(dict.fromkeys(gone))})".strip()
            result.append(replace(turn, content=content, tool_exchanges=kept))
        return result


@dataclass(frozen=True)
class TokenLimiter:
    """Keeps the newest turns that fit `max_tokens`, using each turn's stored token count.

    The newest turn is always kept. A turn is kept or dropped whole, with its tool exchanges.
    """

    max_tokens: int

    def split(
        self, turns: Sequence[StoredMessage]
    ) -> tuple[list[StoredMessage], list[StoredMessage]]:
        """(kept, dropped), both in conversation order."""
        used = 0
        start = len(turns)
        for index in range(len(turns) - 1, -1, -1):
            cost = turns[index].token_count or 0
            if start < len(turns) and used + cost > self.max_tokens:
                break
            used += cost
            start = index
        return list(turns[start:]), list(turns[:start])

    def __call__(self, turns: list[StoredMessage]) -> list[StoredMessage]:
        return self.split(turns)[0]


@dataclass(frozen=True)
class ToolResultMasking:
    """Hides older large tool results behind a reference, at read time only.

    Storage keeps results whole; the model sees "[... hidden; retrieve_tool_result(...)]" for
    results of at least `min_tokens`, except in the `keep_recent` newest turns with tool activity
    and for tools named in `exclude`. Pair it with `make_retrieve_tool_result_tool`.
    """

    keep_recent: int = 2
    exclude: Sequence[str] = ()
    min_tokens: int = 50
    counter: TokenCounter | None = field(default=None, compare=False)

    def __call__(self, turns: list[StoredMessage]) -> list[StoredMessage]:
        counter = self.counter or default_counter()
        with_tools = [i for i, t in enumerate(turns) if t.tool_exchanges]
        recent = set(with_tools[-self.keep_recent:]) if self.keep_recent > 0 else set()
        result = list(turns)
        for index in with_tools:
            if index in recent:
                continue
            turn = turns[index]
            exchanges = tuple(self._mask(e, counter) for e in turn.tool_exchanges)
            result[index] = replace(turn, tool_exchanges=exchanges)
        return result

    def _mask(self, exchange: ToolExchange, counter: TokenCounter) -> ToolExchange:
        if exchange.call.name in self.exclude:
            return exchange
        tokens = counter.count(exchange.result.content)
        if tokens < self.min_tokens:
            return exchange
        note = MASK_NOTE.format(name=exchange.call.name, tokens=tokens, id=exchange.call.id)
        return ToolExchange(exchange.call, ToolResult(exchange.call.id, note,
                                                       exchange.result.is_error))


@dataclass(frozen=True)
class RetrieveToolResultTool:
    """The `retrieve_tool_result` tool: shows a tool result that masking hid (this conversation)."""

    store: ConversationStore
    conversation_id: str
    search_depth: int = 500
    name: str = "retrieve_tool_result"
    description: str = ("Show the full result of an earlier tool call whose result was hidden "
                        "to save space. Input: the tool_call_id named in the hidden result.")
    input_schema: dict[str, Any] = field(default_factory=lambda: {
        "type": "object",
        "properties": {"tool_call_id": {"type": "string"}},
        "required": ["tool_call_id"],
        "additionalProperties": False,
    })

    async def run(self, input: dict[str, Any]) -> str:
        call_id = input.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            return "error: give tool_call_id as a non-empty string"
        turns = await self.store.get(self.conversation_id, limit=self.search_depth)
        for turn in reversed(turns):
            for exchange in turn.tool_exchanges:
                if exchange.call.id == call_id:
                    return exchange.result.content
        return f"no tool call with id {json.dumps(call_id)} in this conversation"


def make_retrieve_tool_result_tool(
    store: ConversationStore, conversation_id: str
) -> RetrieveToolResultTool:
    return RetrieveToolResultTool(store, conversation_id)
