"""The model provider interface: one request in, one response out, provider-neutral.

The agent loop speaks only this; `AnthropicProvider` (the default, the SDK's own
`AsyncAnthropic`), `OpenAIProvider` (any OpenAI-compatible server) and the offline model
implement it, and `threadline.agents.providers` registers them for configurations. A provider
that can also hand over the reply's text as it is written implements `StreamingProvider`; the
agent then shows the reply on the platform while the model is still writing it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from threadline.history.model import Reasoning, ToolCall
from threadline.history.prompt import PromptMessage
from threadline.turn import ModelUsage as ModelUsage  # re-exported: providers import it here


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: a name, what it is for, and a JSON schema of its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


# Whether the model thinks before it answers: "default" leaves it to the model (the newest
# think by default), "off" asks it not to, a number turns thinking on with that many tokens.
Thinking = Literal["default", "off"] | int


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a provider needs for one call.

    `messages` are the assembled prompt plus this run's earlier tool rounds (assistant turns
    carrying `tool_exchanges`, whose calls carry the reasoning that preceded them);
    system messages among them are joined into the system prompt. `max_tokens` bounds the
    reply; a thinking budget comes on top of it.
    """

    model: str
    system: str
    messages: Sequence[PromptMessage]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int = 1024
    thinking: Thinking = "default"


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The model's answer: text, the tools it wants run (if any), why it stopped, what it cost.

    `reasoning` is all the reasoning the reply carried, in order (for the inspector); each tool
    call also carries the part written before it, which the provider sends back in that round.
    `id` is the provider's id of the reply (empty when it gives none), for traces.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = "end_turn"
    usage: ModelUsage = field(default_factory=ModelUsage)
    model: str = ""
    reasoning: tuple[Reasoning, ...] = ()
    id: str = ""


@runtime_checkable
class ModelProvider(Protocol):
    """Turns a `ModelRequest` into a `ModelResponse`; raises `ModelError` subclasses on failure."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model and the provider that serves it: one entry of an agent's `model:` list, which
    is tried in order when the ones before are unavailable."""

    provider: ModelProvider
    model: str


# Hears the reply's text so far (the whole text of this model call, not a delta).
TextSink = Callable[[str], Awaitable[None]]


@runtime_checkable
class StreamingProvider(Protocol):
    """A provider that reports the reply's text while the model writes it."""

    async def stream(self, request: ModelRequest, *, on_text: TextSink) -> ModelResponse:
        """Like `complete`, calling `on_text` with the text so far as it grows."""
        ...
