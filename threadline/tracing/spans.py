"""The spans of one turn, named and filled as an operator's tracing tool expects them.

    threadline.turn                  one inbound turn: conversation, platform, channel, attempt;
      | events: received, routed     who answers and why; the outcome when it ends
      invoke_agent {agent}           one agent's answer: why it answers, why its prompt is what
        |                            it is (`threadline.prompt.*`), what it cost, how it stopped
        chat {model}                 one model call (OpenTelemetry GenAI conventions, `gen_ai.*`):
        |                            the model asked and the one that answered, tokens, cache,
        |                            finish reasons, the reply's id, `error.type`; a model passed
        |                            over for the next one ends in error and says so
        execute_tool {tool}          one tool call: its name and call id
        threadline.deliver           the reply posted through the ledger and stored

Message content (`gen_ai.input.messages`, `gen_ai.system_instructions`,
`gen_ai.output.messages`, tool arguments and results) is recorded only when the operator opts
in, as the convention asks. An SDK that traces its own calls (the Anthropic SDK, through the
global tracer provider `threadline.tracing.export` installs) adds its HTTP-level span under
`chat`, with `http.request.resend_count` when a 429 or 529 was retried; for one that does not
(the OpenAI SDK), each HTTP attempt is an `http.attempt` event on `chat` (`http_attempt`).

Off (the default, or without the `tracing` extra) every function here returns `NO_SPAN` after
one comparison: nothing is built, and nothing of OpenTelemetry is imported here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from threadline.history.model import utc_now
from threadline.turn import PromptFigures

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from threadline.agents.llm import ModelRequest, ModelResponse
    from threadline.history.inbox import InboxTurn
    from threadline.history.model import ToolCall
    from threadline.history.prompt import AssembledPrompt, PromptMessage
    from threadline.turn import AgentResult, ModelUsage

Attributes = Mapping[str, str | bool | int | float | Sequence[str]]


class _Tracing:
    """The live tracer and the content switch, set by `activate` (one per process)."""

    tracer: Tracer | None = None
    capture_content: bool = False


_TRACING = _Tracing()


def activate(tracer: Tracer, *, capture_content: bool) -> None:
    """Spans from now on go to `tracer` (`export.start_tracing` calls this)."""
    _TRACING.tracer = tracer
    _TRACING.capture_content = capture_content


def deactivate() -> None:
    """No more spans (at stop, before the provider shuts down)."""
    _TRACING.tracer = None
    _TRACING.capture_content = False


class NoSpan:
    """What every function returns while tracing is off: each method does nothing."""

    recording = False
    trace_id: str | None = None

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        return None

    def set(self, attributes: Attributes) -> None:
        return None

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def answered(self, response: ModelResponse) -> None:
        return None

    def passed_over(self) -> None:
        return None

    def tool_result(self, content: str, *, is_error: bool) -> None:
        return None

    def finished(self, result: AgentResult) -> None:
        return None


NO_SPAN = NoSpan()


class LiveSpan(NoSpan):
    """One span, current while its `with` block runs; an exception escaping it is its error."""

    recording = True

    def __init__(self, name: str, attributes: Attributes, *, client: bool = False) -> None:
        self._name = name
        self._attributes = attributes
        self._client = client
        self._token: object = None
        self.span: Span | None = None

    @classmethod
    def around(cls, span: Span) -> LiveSpan:
        """A span already open (the current one), to add to; not for a `with` block."""
        live = cls("", {})
        live.span = span
        return live

    def __enter__(self) -> LiveSpan:
        from opentelemetry import context, trace

        tracer = _TRACING.tracer
        assert tracer is not None, "a LiveSpan is made only while tracing is active"
        kind = trace.SpanKind.CLIENT if self._client else trace.SpanKind.INTERNAL
        self.span = tracer.start_span(self._name, kind=kind, attributes=self._attributes)
        self._token = context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        from opentelemetry import context

        span = self.span
        assert span is not None
        if error is not None and not isinstance(error, asyncio.CancelledError | GeneratorExit):
            _failed(span, error)
        context.detach(self._token)  # type: ignore[arg-type]
        span.end()

    @property
    def trace_id(self) -> str | None:  # type: ignore[override]
        return None if self.span is None else f"{self.span.get_span_context().trace_id:032x}"

    def set(self, attributes: Attributes) -> None:
        assert self.span is not None
        self.span.set_attributes(attributes)

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        assert self.span is not None
        self.span.add_event(name, attributes or {})

    def answered(self, response: ModelResponse) -> None:
        self.set(_response_attributes(response))

    def passed_over(self) -> None:
        self.set({"threadline.model.passed_over": True})

    def tool_result(self, content: str, *, is_error: bool) -> None:
        assert self.span is not None
        if is_error:
            from opentelemetry.trace import Status, StatusCode

            # What a tool says may quote what people wrote: content, so only when opted in.
            self.span.set_attribute("error.type", "tool_error")
            self.span.set_status(Status(StatusCode.ERROR, content[:200] if
                                        _TRACING.capture_content else "the tool failed"))
        if _TRACING.capture_content:
            self.span.set_attribute("gen_ai.tool.call.result", content)

    def finished(self, result: AgentResult) -> None:
        self.set(_outcome_attributes(result))


def _failed(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", type(error).__qualname__)
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, str(error)[:300]))


def current_span() -> NoSpan:
    """The span open in this task (the turn's, an agent's...), to add to it; `NO_SPAN` when off
    or when none is open."""
    if _TRACING.tracer is None:
        return NO_SPAN
    from opentelemetry import trace

    span = trace.get_current_span()
    return LiveSpan.around(span) if span.is_recording() else NO_SPAN


async def http_attempt(response: Any) -> None:
    """An HTTP client's response hook: each attempt of a model call as an event on its span
    (a retried 429 or 5xx is one event per attempt), for an SDK that traces nothing itself."""
    span = current_span()
    if span.recording:
        span.event("http.attempt", {"http.response.status_code": response.status_code})


def current_trace_id() -> str | None:
    """The id of the trace this task is in (32 hex digits), None when off: a reply record
    keeps it so the console can link to the operator's tracing tool."""
    return current_span().trace_id


def log_fields() -> dict[str, str]:
    """What a log line of this task binds to be found beside its trace: the trace id, or
    nothing when off."""
    trace_id = current_span().trace_id
    return {} if trace_id is None else {"trace_id": trace_id}


# -- the spans ------------------------------------------------------------------------------

def turn_span(turn: InboxTurn, attempt: int) -> NoSpan:
    """One inbound turn, from the inbox to its last reply delivered."""
    if _TRACING.tracer is None:
        return NO_SPAN
    message = turn.message
    meta = message.metadata
    attributes: dict[str, Any] = {
        "gen_ai.conversation.id": message.conversation_id,
        "threadline.conversation.id": message.conversation_id,
        "threadline.turn.id": message.id, "threadline.turn.attempt": attempt,
        "threadline.platform": meta.channel_type or "", "threadline.participant.kind":
            message.participant.kind}
    if turn.channel:
        attributes["threadline.channel"] = turn.channel
    # How long the person has waited when the answer begins (queueing, a crash, a backlog).
    attributes["threadline.turn.waited_ms"] = round(
        (utc_now() - message.timestamp).total_seconds() * 1000)
    return LiveSpan("threadline.turn", attributes)


def agent_span(agent_name: str, conversation_id: str, *, reason: str | None,
               model: str) -> NoSpan:
    """One agent answering one turn (`invoke_agent` in the GenAI conventions)."""
    if _TRACING.tracer is None:
        return NO_SPAN
    return LiveSpan(f"invoke_agent {agent_name}", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name,
        "gen_ai.conversation.id": conversation_id, "gen_ai.request.model": model,
        "threadline.addressed_because": reason or "none"})


def model_span(request: ModelRequest, provider: object, *, purpose: str = "reply") -> NoSpan:
    """One model call (`chat` in the GenAI conventions); `purpose` says what it is for: the
    reply, or the rolling summary written while the prompt is assembled."""
    if _TRACING.tracer is None:
        return NO_SPAN
    # A provider plug names itself; another provider is named by its class.
    provider_name = getattr(provider, "provider_name", type(provider).__name__)
    thinking = request.thinking
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name,
        "gen_ai.request.model": request.model, "gen_ai.request.max_tokens": request.max_tokens,
        "threadline.model.purpose": purpose,
        "threadline.thinking": thinking if isinstance(thinking, str) else "budget",
        "threadline.request.tools": [t.name for t in request.tools]}
    if isinstance(thinking, int):
        attributes["threadline.thinking.budget_tokens"] = thinking
    if _TRACING.capture_content:
        attributes["gen_ai.system_instructions"] = json.dumps(
            [{"type": "text", "content": request.system}], ensure_ascii=False)
        attributes["gen_ai.input.messages"] = json.dumps(
            [_message(m) for m in request.messages], ensure_ascii=False)
    return LiveSpan(f"chat {request.model}", attributes, client=True)


def tool_span(call: ToolCall, description: str) -> NoSpan:
    """One tool call (`execute_tool` in the GenAI conventions)."""
    if _TRACING.tracer is None:
        return NO_SPAN
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
        "gen_ai.tool.description": description}
    if _TRACING.capture_content:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(
            dict(call.input), ensure_ascii=False, sort_keys=True)
    return LiveSpan(f"execute_tool {call.name}", attributes)


def deliver_span(agent_name: str) -> NoSpan:
    """A reply posted through the reply ledger and stored."""
    if _TRACING.tracer is None:
        return NO_SPAN
    return LiveSpan("threadline.deliver", {"gen_ai.agent.name": agent_name})


def routed(routes: Sequence[tuple[str, str]]) -> None:
    """Who answers the turn and why (`history.addressing.route`'s decision), on its span: an
    event when it was decided, and the agents as an attribute a trace search can find."""
    span = current_span()
    if not span.recording:
        return
    agents = [name for name, _ in routes]
    span.event("threadline.routed", {"gen_ai.agent.name": agents,
                                     "threadline.addressed_because": [r for _, r in routes]})
    span.set({"threadline.agents": agents})


def explain_prompt(prompt: AssembledPrompt) -> None:
    """Why the prompt is what it is, on the agent's span: the assembler's own account
    (`AssembledPrompt`, which the reply record keeps too), counted as `PromptFigures` counts
    it, with the recalled turns the search matched, best first."""
    span = current_span()
    if not span.recording:
        return
    figures = PromptFigures.of(prompt)
    span.set({
        "threadline.prompt.tokens": figures.token_count,
        "threadline.prompt.turns_included": figures.included,
        "threadline.prompt.turns_filtered": figures.filtered,
        "threadline.prompt.turns_dropped_for_budget": figures.dropped_for_budget,
        "threadline.prompt.turns_recalled": figures.recalled,
        "threadline.prompt.recall_hit_ids": list(prompt.recall_hit_ids),
        "threadline.prompt.filtered_ids": list(prompt.filtered_ids),
        "threadline.prompt.dropped_for_budget_ids": list(prompt.dropped_for_budget_ids),
        "threadline.prompt.summary_used": figures.summary_used,
        "threadline.prompt.summary_created": figures.summary_created,
        "threadline.prompt.notes": list(figures.notes)})


# -- what the spans carry ------------------------------------------------------------------

def _usage_attributes(usage: ModelUsage) -> dict[str, int]:
    # The convention counts every input token in `input_tokens`, cached ones included.
    return {
        "gen_ai.usage.input_tokens": (usage.input_tokens + usage.cache_read_input_tokens
                                      + usage.cache_creation_input_tokens),
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens}


def _response_attributes(response: ModelResponse) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.response.finish_reasons": [response.stop_reason],
        "threadline.response.tool_calls": [c.name for c in response.tool_calls],
        "threadline.response.reasoning_blocks": len(response.reasoning),
        **_usage_attributes(response.usage)}
    if response.model:
        attributes["gen_ai.response.model"] = response.model
    if response.id:
        attributes["gen_ai.response.id"] = response.id
    if _TRACING.capture_content:
        parts: list[dict[str, Any]] = [{"type": "text", "content": response.text}] \
            if response.text else []
        parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": dict(c.input)}
                  for c in response.tool_calls]
        attributes["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": parts, "finish_reason": response.stop_reason}],
            ensure_ascii=False)
    return attributes


def _outcome_attributes(result: AgentResult) -> dict[str, Any]:
    return {"threadline.stop_reason": result.stop_reason,
            "threadline.model_calls": result.model_calls,
            "threadline.tool_calls": [e.call.name for e in result.tool_exchanges],
            "threadline.delivered": bool(result.delivered_ids),
            **_usage_attributes(result.usage)}


def _message(message: PromptMessage) -> dict[str, Any]:
    """A prompt message in the conventions' message form (text, tool calls and results)."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": message.content}] \
        if message.content else []
    for exchange in message.tool_exchanges:
        parts.append({"type": "tool_call", "id": exchange.call.id, "name": exchange.call.name,
                      "arguments": dict(exchange.call.input)})
        parts.append({"type": "tool_call_response", "id": exchange.call.id,
                      "response": exchange.result.content})
    return {"role": message.role, "parts": parts}
