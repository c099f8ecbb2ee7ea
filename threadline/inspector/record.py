"""The reply record: what one agent saw, did and said for one turn, as it is stored and shown.

The figures a listing or a chart needs are fields; everything else (the prompt part by part,
each model call's exact request and response, the tool exchanges, the delivered ids) is the
JSON `detail`, which listings leave unread (None).

`detail` layout, for scripts reading `threadline inspect show --json`:

    inbound         the turn answered: id, participant, content, platform ids
    prompt          token_budget, token_count, parts [{part, role, content, tokens}],
                    included_ids, dropped_for_budget_ids, filtered_ids, recalled_ids,
                    recall_hit_ids (the recalled turns the search matched, best first),
                    grounded (the knowledge sections shown: source, document, section,
                    link, id, cited_as), summary_used, summary_created, notes
    system_prompt   the agent's system prompt
    tools           the tool names offered to the model
    model_calls     [{model, format, request, response, usage, latency_ms, error, passed_over}];
                    `request` is what the provider sent, tools by name; `format` names its
                    shape: the provider's name ("anthropic": the Messages API body,
                    "openai": the Chat Completions parameters) for a provider that renders
                    its requests, else "neutral" (our provider-neutral request); `response` has the
                    model's `reasoning` (thinking blocks), shown here and nowhere else
    passed_over     [{model, reason}]: the agent's models that were unavailable this turn, so
                    its next model answered (the record's `model` is the one that did)
    tool_exchanges  [{call: {id, name, input}, result: {content, is_error}}]
    delivered_ids   the platform ids of the posted reply's parts
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from threadline.history.assembler import SUMMARY_HEADER
from threadline.history.prompt import PromptMessage
from threadline.history.recall import RECALL_HEADER
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter, exchange_tokens

# How a prompt message is marked in a record and on the console.
PARTS = ("summary", "recalled", "knowledge", "kept", "newest")


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """One agent turn as recorded; see the module docstring for `detail`.

    `latency_ms` is the whole turn, from the agent taking it to the reply posted and stored.
    `trace_id` is the OpenTelemetry trace the turn was exported in (None with tracing off).
    `delivery_status` is what the platform said became of each posted part, by its platform
    message id (`threadline.channels.delivery_status`; None: the platform said nothing).
    """

    id: str
    conversation_id: str
    agent: str
    inbound_id: str
    outbound_id: str | None
    created_at: datetime
    addressed_because: str | None
    model: str
    stop_reason: str
    latency_ms: float
    model_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    prompt_tokens: int
    token_budget: int
    reply: str
    error: str | None = None
    detail: Mapping[str, Any] | None = None
    trace_id: str | None = None
    delivery_status: Mapping[str, Any] | None = None

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of the input tokens read from the provider's prompt cache (None: no input)."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / total if total else None

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (`created_at` as ISO 8601)."""
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["detail"] = dict(self.detail) if self.detail is not None else None
        data["delivery_status"] = (dict(self.delivery_status)
                                   if self.delivery_status is not None else None)
        return data


def part_of(message: PromptMessage, *, newest: bool) -> str:
    """Which part of the prompt a message is: summary, recalled, the newest turn, kept, or
    the part a feature's block names (`PromptMessage.part`: "knowledge")."""
    if message.part is not None:
        return message.part
    if message.role == "system" and message.content.startswith(SUMMARY_HEADER):
        return "summary"
    if message.role == "system" and message.content.startswith(RECALL_HEADER):
        return "recalled"
    return "newest" if newest else "kept"


def prompt_parts(messages: Sequence[PromptMessage], counter: TokenCounter) -> list[dict[str, Any]]:
    """The prompt messages, each marked with its part and sized as the budget measures it."""
    last = len(messages) - 1
    parts = []
    for index, message in enumerate(messages):
        exchanges = [e.as_dict() for e in message.tool_exchanges]
        tokens = PER_MESSAGE_OVERHEAD + counter.count(message.content) + sum(
            exchange_tokens(e, counter) for e in message.tool_exchanges)
        part: dict[str, Any] = {"part": part_of(message, newest=index == last),
                                "role": message.role, "content": message.content,
                                "tokens": tokens}
        if exchanges:
            part["tool_exchanges"] = exchanges
        parts.append(part)
    return parts
