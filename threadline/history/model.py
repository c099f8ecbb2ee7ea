"""The message model: one turn of one conversation, as every store keeps it.

Records are frozen dataclasses (cheap to build when thousands are read back per prompt) that
validate on construction and name the offending field and value. A tool call and its result are
one `ToolExchange`, so a call without its result (or the reverse) cannot be stored by accident.

Text is stored as given, with one documented exception: NUL characters (which PostgreSQL text
cannot hold) and lone surrogates (half of a UTF-16 pair, which no UTF-8 encoder, database
driver or JSON body accepts; a platform's JSON can carry them as `\ud800`) are replaced by
U+FFFD in every text field and every store alike, so a turn is never dropped for them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from threadline.errors import InvalidMessageError

ParticipantKind = Literal["user", "agent", "system"]
Scope = Literal["channel", "dm", "thread"]

PARTICIPANT_KINDS: frozenset[str] = frozenset(get_args(ParticipantKind))
SCOPES: frozenset[str] = frozenset(get_args(Scope))
MAX_CONTENT_CHARS = 1_000_000
NUL_REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD (see the module docstring)."""
    return text if text.isascii() and "\x00" not in text else _UNSTORABLE.sub(
        NUL_REPLACEMENT, text)


def _invalid(owner: str, name: str, value: object, expected: str) -> InvalidMessageError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidMessageError(f"{owner}.{name} must be {expected}, got {shown}")


def _without_nul(record: object, *names: str) -> None:
    """Make these text fields of a frozen record storable (`storable_text`)."""
    for name in names:
        value = getattr(record, name)
        if isinstance(value, str):
            cleaned = storable_text(value)
            if cleaned is not value:
                object.__setattr__(record, name, cleaned)


def _require_text(owner: str, name: str, value: object, *, empty_ok: bool = False) -> None:
    if not isinstance(value, str) or (not empty_ok and not value):
        raise _invalid(owner, name, value, "a string" if empty_ok else "a non-empty string")


@dataclass(frozen=True, slots=True)
class Participant:
    """Who wrote a turn: a human user, an agent, or the system."""

    kind: ParticipantKind
    id: str
    display_name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PARTICIPANT_KINDS:
            raise _invalid("Participant", "kind", self.kind, "one of user, agent, system")
        _require_text("Participant", "id", self.id)
        _require_text("Participant", "display_name", self.display_name, empty_ok=True)
        _without_nul(self, "id", "display_name")
        if not self.display_name:
            object.__setattr__(self, "display_name", self.id)


@dataclass(frozen=True, slots=True)
class Reasoning:
    """What a model thought before asking for a tool, kept verbatim for the rest of that round.

    Thinking models need it back, unaltered, while their tool round lasts (Anthropic answers
    400 otherwise), and it is nobody else's business: it is stored with the call (for the
    inspector), never projected to another agent, posted or summarized. `format` is the
    provider wire format it came in ("anthropic": a `thinking` block with its `signature`, or a
    `redacted_thinking` block; "openai": `{"reasoning_content": ...}`); `block` is that
    provider's own data, never rewritten, so a provider sends back exactly what it got.
    """

    format: str
    block: Mapping[str, Any]

    def __post_init__(self) -> None:
        _require_text("Reasoning", "format", self.format)
        if not isinstance(self.block, Mapping):
            raise _invalid("Reasoning", "block", self.block, "a mapping")

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "block": dict(self.block)}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool the model asked to run, with the model's input and the reasoning before it."""

    id: str
    name: str
    input: Mapping[str, Any]
    reasoning: tuple[Reasoning, ...] = ()

    def __post_init__(self) -> None:
        _require_text("ToolCall", "id", self.id)
        _require_text("ToolCall", "name", self.name)
        if not isinstance(self.input, Mapping):
            raise _invalid("ToolCall", "input", self.input, "a mapping")
        if not isinstance(self.reasoning, tuple):
            object.__setattr__(self, "reasoning", tuple(self.reasoning))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned for one call."""

    tool_call_id: str
    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        _require_text("ToolResult", "tool_call_id", self.tool_call_id)
        _require_text("ToolResult", "content", self.content, empty_ok=True)


@dataclass(frozen=True, slots=True)
class ToolExchange:
    """A tool call and its result: one unit in storage, budget, filters and summaries."""

    call: ToolCall
    result: ToolResult

    def __post_init__(self) -> None:
        if self.result.tool_call_id != self.call.id:
            raise _invalid(
                "ToolExchange", "result.tool_call_id", self.result.tool_call_id,
                f"the call's id {self.call.id!r}",
            )

    def as_dict(self) -> dict[str, Any]:
        call: dict[str, Any] = {"id": self.call.id, "name": self.call.name,
                                "input": dict(self.call.input)}
        if self.call.reasoning:
            call["reasoning"] = [r.as_dict() for r in self.call.reasoning]
        return {"call": call,
                "result": {"content": self.result.content, "is_error": self.result.is_error}}

    def without_reasoning(self) -> ToolExchange:
        """The exchange as anyone but the model that made it may see it (a later turn, another
        agent): the reasoning stays with the round it was written for."""
        if not self.call.reasoning:
            return self
        return replace(self, call=replace(self.call, reasoning=()))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ToolExchange:
        call = raw["call"]
        result = raw["result"]
        reasoning = tuple(Reasoning(format=r["format"], block=r["block"])
                          for r in call.get("reasoning") or ())
        return cls(
            call=ToolCall(id=call["id"], name=call["name"], input=call.get("input", {}),
                          reasoning=reasoning),
            result=ToolResult(
                tool_call_id=call["id"], content=result["content"],
                is_error=bool(result.get("is_error", False)),
            ),
        )


_METADATA_KEYS = (
    "channel_type", "channel_name", "channel_id", "thread_id", "message_id", "mentions",
    "is_summary", "summary_of", "reply_to_message_id", "reply_to_participant_id",
)


@dataclass(frozen=True, slots=True)
class MessageMetadata:
    """Where a turn came from and whom it addresses.

    Read it as attributes (`m.metadata.mentions`) or as a mapping (`m.metadata["mentions"]`);
    keys beyond the known ones are kept in `extra` and readable the same two ways by key.
    `summary_of` is the (first, last) sequence range a summary turn covers.
    """

    channel_type: str = "local"
    channel_name: str | None = None
    channel_id: str | None = None
    thread_id: str | None = None
    message_id: str | None = None
    mentions: tuple[str, ...] = ()
    is_summary: bool = False
    summary_of: tuple[int, int] | None = None
    reply_to_message_id: str | None = None
    reply_to_participant_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require_text("MessageMetadata", "channel_type", self.channel_type)
        for name in ("channel_name", "channel_id", "thread_id", "message_id",
                     "reply_to_message_id", "reply_to_participant_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise _invalid("MessageMetadata", name, value, "a string or None")
        if isinstance(self.mentions, str) or not all(isinstance(m, str) for m in self.mentions):
            raise _invalid("MessageMetadata", "mentions", self.mentions, "a list of strings")
        object.__setattr__(self, "mentions",
                           tuple(storable_text(m) for m in self.mentions))
        _without_nul(self, "channel_type", "channel_name", "channel_id", "thread_id",
                     "message_id", "reply_to_message_id", "reply_to_participant_id")
        if self.summary_of is not None:
            first, last = self.summary_of
            object.__setattr__(self, "summary_of", (int(first), int(last)))

    @classmethod
    def coerce(cls, value: MessageMetadata | Mapping[str, Any] | None) -> MessageMetadata:
        """Accept our own type or a plain dict with the documented keys (others go to extra)."""
        if value is None:
            return cls()
        if isinstance(value, MessageMetadata):
            return value
        if not isinstance(value, Mapping):
            raise _invalid("StoredMessage", "metadata", value, "a mapping or MessageMetadata")
        known = {k: v for k, v in value.items() if k in _METADATA_KEYS}
        extra = {k: v for k, v in value.items() if k not in _METADATA_KEYS and k != "extra"}
        extra.update(value.get("extra") or {})
        return cls(**known, extra=extra)

    def __getitem__(self, key: str) -> Any:
        if key in _METADATA_KEYS:
            return getattr(self, key)
        return self.extra[key]

    def __contains__(self, key: object) -> bool:
        return key in _METADATA_KEYS or key in self.extra

    def __iter__(self) -> Iterator[str]:
        yield from _METADATA_KEYS
        yield from self.extra

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def as_dict(self) -> dict[str, Any]:
        return {key: self[key] for key in self}


def new_message_id() -> str:
    """A fresh unique id for a turn the platform gave no id for."""
    return str(uuid.uuid4())


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One turn of one conversation.

    `sequence` and `token_count` are filled in by the store on append: the sequence is the
    order of arrival in that conversation (never a clock), the token count is computed once.
    """

    conversation_id: str
    participant: Participant
    content: str
    id: str = field(default_factory=new_message_id)
    timestamp: datetime = field(default_factory=utc_now)
    scope: Scope = "channel"
    metadata: MessageMetadata = field(default_factory=MessageMetadata)
    tool_exchanges: tuple[ToolExchange, ...] = ()
    sequence: int | None = None
    token_count: int | None = None

    def __post_init__(self) -> None:
        _require_text("StoredMessage", "id", self.id)
        _require_text("StoredMessage", "conversation_id", self.conversation_id)
        if not isinstance(self.participant, Participant):
            raise _invalid("StoredMessage", "participant", self.participant, "a Participant")
        if not isinstance(self.content, str):
            raise _invalid("StoredMessage", "content", self.content, "a string")
        if len(self.content) > MAX_CONTENT_CHARS:
            raise InvalidMessageError(
                f"StoredMessage.content is {len(self.content):,} characters; the limit is "
                f"{MAX_CONTENT_CHARS:,}. Split the text or store it as an attachment."
            )
        _without_nul(self, "id", "conversation_id", "content")
        if not isinstance(self.timestamp, datetime) or self.timestamp.utcoffset() is None:
            raise _invalid("StoredMessage", "timestamp", self.timestamp,
                           "a timezone-aware datetime (for example tzinfo=timezone.utc)")
        if self.scope not in SCOPES:
            raise _invalid("StoredMessage", "scope", self.scope, "one of channel, dm, thread")
        if not isinstance(self.metadata, MessageMetadata):
            object.__setattr__(self, "metadata", MessageMetadata.coerce(self.metadata))
        if not isinstance(self.tool_exchanges, tuple):
            object.__setattr__(self, "tool_exchanges", tuple(self.tool_exchanges))
        for exchange in self.tool_exchanges:
            if not isinstance(exchange, ToolExchange):
                raise _invalid("StoredMessage", "tool_exchanges", exchange,
                               "ToolExchange items (a call paired with its result)")
        if self.tool_exchanges and self.participant.kind != "agent":
            raise _invalid("StoredMessage", "tool_exchanges", "...",
                           "empty unless the participant is an agent")

    @property
    def is_summary(self) -> bool:
        return self.metadata.is_summary

    @property
    def is_command(self) -> bool:
        """A command someone sent (`/forget`) or its answer: recorded, never shown to a model."""
        return bool(self.metadata.extra.get("command"))

    def with_store_fields(self, *, sequence: int, token_count: int) -> StoredMessage:
        return replace(self, sequence=sequence, token_count=token_count)
