"""One agent turn as data: what an interceptor sees (`TurnContext`) and what a turn gives back.

A leaf module: agents, interceptors and the turn pipeline all import it and it imports none of
them, so none of them imports another just to name a turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from threadline.history.assembler import AssemblerOptions
from threadline.history.model import StoredMessage, ToolExchange
from threadline.history.prompt import AssembledPrompt, PromptMessage
from threadline.history.store import ConversationStore


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """Tokens one or more model calls cost, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=(self.cache_creation_input_tokens
                                         + other.cache_creation_input_tokens))


class Deliver(Protocol):
    """Where one agent's reply to one inbound turn goes while it is being written.

    The pipeline gives one per agent turn (it keeps the reply ledger); the agent says it is
    working (`activity` names a tool being run), shows the reply so far as the model writes it,
    and finally posts the whole reply once, or gives up with the error that stopped the turn.
    """

    async def working(self, activity: str | None = None) -> None:
        """The agent is thinking (None) or running the tool `activity`."""
        ...

    async def show(self, outbound: StoredMessage) -> None:
        """The reply so far (its whole text); it may start over after a tool round."""
        ...

    async def post(self, outbound: StoredMessage) -> list[str]:
        """The reply is complete: post it (or end what was shown with it); its platform ids,
        none when it could not be posted."""
        ...

    async def abandon(self, error: BaseException | None) -> None:
        """No reply comes (the turn failed with `error`, or has nothing to say): end whatever
        was shown with an apology, and clear the status."""
        ...


EDITED = "edited"  # `metadata.extra` key of a turn answered again as edited: the edit's digest


def reply_turn_id(inbound: StoredMessage, agent_name: str) -> str:
    """The id of `agent_name`'s reply to a turn: the same on every attempt, so a turn answered
    again after a crash stores its reply once and finds it in the reply ledger. A turn answered
    again as edited gets a reply of its own (one per distinct edit)."""
    edited = inbound.metadata.extra.get(EDITED)
    return f"{inbound.id}~{edited}>{agent_name}" if edited else f"{inbound.id}>{agent_name}"


@dataclass(frozen=True, slots=True)
class PromptFigures:
    """What the assembled prompt held: the numbers behind what the agent knew this turn."""

    token_count: int
    included: int
    dropped_for_budget: int
    filtered: int
    recalled: int
    summary_used: bool
    summary_created: bool
    notes: tuple[str, ...] = ()

    @classmethod
    def of(cls, prompt: AssembledPrompt, *notes: str) -> PromptFigures:
        return cls(
            token_count=prompt.token_count, included=len(prompt.included_ids),
            dropped_for_budget=len(prompt.dropped_for_budget_ids),
            filtered=len(prompt.filtered_ids), recalled=len(prompt.recalled_ids),
            summary_used=prompt.summary_used, summary_created=prompt.summary_created,
            notes=(*prompt.notes, *notes),
        )


@dataclass(frozen=True, slots=True)
class AgentResult:
    """One agent turn: the reply, its tool activity, what it cost, and the turn to store.

    `outbound` is None when there is nothing to say (an empty reply, or a turn an interceptor
    dropped). `stop_reason` is the model's (`end_turn`, `max_tokens`, ...) or ours:
    `max_tool_rounds`, `timeout`, `rate_limited`, `error`. `latency` is in seconds.
    `delivered_ids` are the platform ids the reply was posted as (empty when not posted).
    `usage_by_model` splits `usage` by the model that spent it (a fallback answered part).
    """

    agent_name: str
    conversation_id: str
    output: str
    outbound: StoredMessage | None
    tool_exchanges: tuple[ToolExchange, ...] = ()
    usage: ModelUsage = field(default_factory=ModelUsage)
    latency: float = 0.0
    prompt: PromptFigures | None = None
    stop_reason: str = "end_turn"
    model_calls: int = 0
    delivered_ids: tuple[str, ...] = ()
    usage_by_model: Mapping[str, ModelUsage] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Grounded:
    """A block a feature grounds a turn with (the knowledge feature's sections): the prompt
    message, its tokens, and what it shows as the reply record keeps it (one mapping each)."""

    message: PromptMessage
    tokens: int
    shown: tuple[Mapping[str, Any], ...] = ()


class Grounding(Protocol):
    """What a feature puts in an agent's prompt beside the history, made for each turn.

    The agent holds `reserve` tokens of its budget back from the history, assembles the
    prompt in the rest, then asks `ground` with the texts of the turns the prompt shows
    before the answered one; the block goes just before the answered turn, where what
    changes every turn costs the prompt cache least.
    """

    def reserve(self, agent: str, token_budget: int) -> int: ...

    async def ground(self, context: TurnContext, earlier: Sequence[str], *, room: int
                     ) -> Grounded | None: ...


class TurnAgent(Protocol):
    """What an interceptor may ask of the agent whose turn it wraps."""

    @property
    def name(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def assembler_options(self) -> AssemblerOptions: ...

    def reply_result(self, context: TurnContext, text: str, *, stop_reason: str,
                     latency: float = 0.0) -> AgentResult: ...


class Settling(Protocol):
    """A write an agent turn owes once it is done: its spend
    (`threadline.spend.ledger.Settlement`)."""

    @property
    def ledger(self) -> object:
        """The part it is written to (a backend writes together only what it holds)."""
        ...

    @property
    def heard(self) -> Callable[[Any], None]:
        """Told what writing it returned, or the `StoreError` that kept it from being written."""
        ...

    async def settle(self) -> None:
        """Write it on its own."""
        ...

    async def hear_recorded(self) -> None:
        """Tell `heard` what is recorded: a joint write recorded it, and raised after."""
        ...


class Owing(Protocol):
    """Where an agent turn leaves what it owes, to be written with its delivered reply in one
    transaction (the pipeline's: `threadline.after_delivery.AfterDelivery`)."""

    def owe(self, settlement: Settling) -> None: ...


@dataclass(slots=True)
class TurnContext:
    """One turn of one agent: who is answering, what, where, and a logger that says so.

    `aliases` are extra names the agent answers to in this channel (the bot's platform ids).
    `deliver`, when given, shows the agent working and the reply as it is written, then posts
    it on the platform (the pipeline's delivery step runs inside capture, so the stored reply
    carries the platform's message id). `reason` says why
    the agent answers (`mention`, `alias`, `dm`, `reply`, `thread`, `respond_to_all`,
    `agent_mention`, `schedule`), or is None when no team routed the turn. `channel` names the
    channel the turn came in on (None without one): a tool made per turn posts there later.
    `after_delivery`, given by the turn pipeline, gathers what the turn leaves to write (its
    spend) so the pipeline writes it with the delivered reply, in one transaction; without it
    each part writes its own at once.
    """

    agent: TurnAgent
    inbound: StoredMessage
    conversation_id: str
    store: ConversationStore
    log: Any  # a structlog BoundLogger bound with conversation_id and agent
    aliases: tuple[str, ...] = ()
    deliver: Deliver | None = None
    reason: str | None = None
    channel: str | None = None
    after_delivery: Owing | None = None
