"""`ReplyRecorder`: keeps a reply record for every turn of the agents it observes.

    recorder = ReplyRecorder(backend.records, redactor=redactor_for(settings))
    agent = Agent(name="support", ..., observer=recorder)

The agent hands each turn's prompt, model calls and outcome to a `_Turn` (the recorder's
`TurnTrace`). Nothing is built or written on the turn's path: a finished turn is queued, and
`gather_seconds` later a background task writes everything queued meanwhile in one
transaction, building each record there and redacting secrets first. Building and writing a
record cost a busy bot's next turn about as much as the rest of its Python (a turn answered
while they ran waited for them); gathered, a turn rarely meets them, and every turn answered in
the window shares one write. `flush()` and `close()` write at once. A record is diagnostics,
not history: if the database is down the queue keeps at most `max_pending` turns and drops the
oldest with a warning; `close()` writes what is left. A `kill -9` loses the queued records (at
most the last `gather_seconds` of them, or what the database refused), never a turn of the
conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import structlog

from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.agents.observe import TurnTrace
from threadline.channels.delivery_status import PartStatus, advanced
from threadline.history.model import StoredMessage, utc_now
from threadline.history.prompt import AssembledPrompt
from threadline.history.tokens import default_counter
from threadline.inspector.record import ReplyRecord, prompt_parts
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import Redactor
from threadline.tracing import current_trace_id
from threadline.waiting import cancel_and_wait, set_within

if TYPE_CHECKING:
    from threadline.agents.agent import Agent
    from threadline.turn import AgentResult, TurnContext

log = structlog.get_logger("threadline.inspector")

MAX_PENDING = 1000
# Seconds a finished turn's record waits for the records of other turns to join its write: a
# tenth of a second later in the console is nothing to the person reading it.
GATHER_SECONDS = 0.1
# Posted replies whose platform statuses are held until their turn's record is built (the
# statuses that came back while the turn still ran: after the reply was posted, before the turn
# ended); beyond it the oldest reply's are dropped.
MAX_EARLY_STATUSES = 1000


@dataclass(slots=True)
class _Call:
    request: ModelRequest
    response: ModelResponse | None
    latency: float
    error: BaseException | None
    passed_over: bool = False


@dataclass(slots=True, eq=False)
class _Turn:
    """One observed turn: the raw objects, turned into a record only when written."""

    recorder: ReplyRecorder
    agent: Agent
    inbound: StoredMessage
    addressed_because: str | None
    started_at: datetime
    prompt: AssembledPrompt | None = None
    prompt_note: str = ""
    calls: list[_Call] = field(default_factory=list)
    result: AgentResult | None = None
    error: BaseException | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # What the platform said of its posted parts before the turn ended (`hold_status`).
    early_statuses: dict[str, Any] | None = None
    # The whole turn as the person waits for it: prompt, model, tools, delivery, storing.
    began: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    trace_id: str | None = field(default_factory=current_trace_id)  # None: tracing is off

    # -- TurnTrace ---------------------------------------------------------------------

    def prompt_assembled(self, prompt: AssembledPrompt | None, note: str = "") -> None:
        self.prompt, self.prompt_note = prompt, note

    def model_called(self, request: ModelRequest, response: ModelResponse | None, *,
                     latency: float, error: BaseException | None = None,
                     passed_over: bool = False) -> None:
        self.calls.append(_Call(request, response, latency, error, passed_over))

    def finished(self, result: AgentResult | None, error: BaseException | None = None) -> None:
        self.result, self.error = result, error
        self.seconds = time.perf_counter() - self.began
        self.recorder.enqueue(self)

    # -- the record ----------------------------------------------------------------------

    def to_record(self) -> ReplyRecord:
        try:
            return self._built_record()
        except Exception as exc:  # a bug in building it must not hold up the records behind
            raise UnrecordableTurn(self, exc) from exc

    def _built_record(self) -> ReplyRecord:
        redactor = self.recorder.redactor
        result = self.result
        usage = result.usage if result is not None else _summed(self.calls)
        # A model passed over for the next one is not the turn's error: `passed_over` says why.
        error = self.error or next(
            (c.error for c in reversed(self.calls) if c.error and not c.passed_over), None)
        budget = self.agent.assembler_options.token_budget
        detail = redactor.value({
            "inbound": _inbound(self.inbound),
            "addressed_because": self.addressed_because,
            "prompt": self._prompt_detail(budget),
            "system_prompt": self.agent.system_prompt,
            "tools": [t.name for t in self.calls[0].request.tools] if self.calls else [
                t.name for t in self.agent.tools],
            "model_calls": [self._call_detail(c) for c in self.calls],
            "passed_over": [{"model": c.request.model, "reason": f"{type(c.error).__name__}: "
                             f"{c.error}"} for c in self.calls if c.passed_over],
            "tool_exchanges": [e.as_dict() for e in (result.tool_exchanges if result else ())],
            "delivered_ids": list(result.delivered_ids) if result else [],
        })
        return ReplyRecord(
            id=self.id, conversation_id=self.inbound.conversation_id, agent=self.agent.name,
            inbound_id=self.inbound.id,
            outbound_id=result.outbound.id if result and result.outbound else None,
            created_at=self.started_at, addressed_because=self.addressed_because,
            model=next((_answered_by(c) for c in reversed(self.calls)), self.agent.model),
            stop_reason=result.stop_reason if result else "raised",
            latency_ms=round(self.seconds * 1000, 3),
            model_calls=len(self.calls), input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            prompt_tokens=self.prompt.token_count if self.prompt else 0, token_budget=budget,
            reply=redactor.text(result.output if result else ""),
            error=redactor.text(f"{type(error).__name__}: {error}") if error else None,
            detail=detail, trace_id=self.trace_id, delivery_status=self.early_statuses,
        )

    def _prompt_detail(self, budget: int) -> dict[str, Any]:
        prompt = self.prompt
        sent = self.calls[0].request.messages if self.calls else (
            prompt.messages if prompt else [])
        notes = [*(prompt.notes if prompt else []), *([self.prompt_note] if self.prompt_note
                                                      else [])]
        return {
            "token_budget": budget,
            "token_count": prompt.token_count if prompt else 0,
            "parts": prompt_parts(sent, default_counter()),
            "included_ids": list(prompt.included_ids) if prompt else [],
            "dropped_for_budget_ids": list(prompt.dropped_for_budget_ids) if prompt else [],
            "filtered_ids": list(prompt.filtered_ids) if prompt else [],
            "recalled_ids": list(prompt.recalled_ids) if prompt else [],
            "recall_hit_ids": list(prompt.recall_hit_ids) if prompt else [],
            "grounded": [dict(shown) for shown in prompt.grounded] if prompt else [],
            "summary_used": prompt.summary_used if prompt else False,
            "summary_created": prompt.summary_created if prompt else False,
            "notes": notes,
        }

    def _call_detail(self, call: _Call) -> dict[str, Any]:
        provider = next((m.provider for m in self.agent.models
                         if m.model == call.request.model), self.agent.provider)
        form, request = rendered_request(provider, call.request)
        response = call.response
        return {
            "model": _answered_by(call),
            "format": form,
            "request": request,
            "response": None if response is None else {
                "model": response.model, "text": response.text,
                "stop_reason": response.stop_reason,
                "tool_calls": [{"id": c.id, "name": c.name, "input": dict(c.input)}
                               for c in response.tool_calls],
                "reasoning": [r.as_dict() for r in response.reasoning],
            },
            "usage": _usage(response.usage if response else ModelUsage()),
            "latency_ms": round(call.latency * 1000, 3),
            "error": f"{type(call.error).__name__}: {call.error}" if call.error else None,
            "passed_over": call.passed_over,
        }


def rendered_request(provider: Any, request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """The request as the provider sends it, tool specs by name; ("neutral", ...) otherwise.

    A provider with a deterministic `render(request)` (Anthropic's, OpenAI's) gives the exact
    body it posts, so a record can be compared byte for byte with what the API received; the
    format is the provider's `provider_name`. Each provider shapes its tool specs its own way,
    so they are replaced by the names the request itself offered, not read from the body.
    """
    render = getattr(provider, "render", None)
    if callable(render):
        body = dict(render(request))
        if "tools" in body:
            body["tools"] = [t.name for t in request.tools]
        form = getattr(provider, "provider_name", type(provider).__name__)
        return str(form), json.loads(json.dumps(body, default=str))
    return "neutral", {
        "model": request.model, "system": request.system, "max_tokens": request.max_tokens,
        "messages": [{"role": m.role, "content": m.content,
                      **({"tool_exchanges": [e.as_dict() for e in m.tool_exchanges]}
                         if m.tool_exchanges else {})} for m in request.messages],
        "tools": [t.name for t in request.tools],
    }


class UnrecordableTurn(Exception):
    """A finished turn whose record could not be built (a bug, not the store's refusal)."""

    def __init__(self, turn: _Turn, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.turn = turn


def _answered_by(call: _Call) -> str:
    """The model that answered (as the provider reports it), else the one asked for."""
    return (call.response.model if call.response is not None else "") or call.request.model


def _inbound(message: StoredMessage) -> dict[str, Any]:
    meta = message.metadata
    return {"id": message.id, "participant": {"kind": message.participant.kind,
                                              "id": message.participant.id,
                                              "name": message.participant.display_name},
            "content": message.content, "scope": message.scope,
            "channel_type": meta.channel_type, "channel_name": meta.channel_name,
            "platform_message_id": meta.message_id, "thread_id": meta.thread_id}


def _usage(usage: ModelUsage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens}


def _summed(calls: list[_Call]) -> ModelUsage:
    usages = [c.response.usage for c in calls if c.response is not None]
    return ModelUsage(
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        cache_read_input_tokens=sum(u.cache_read_input_tokens for u in usages),
        cache_creation_input_tokens=sum(u.cache_creation_input_tokens for u in usages))


class ReplyRecorder:
    """A `TurnObserver` that writes one `ReplyRecord` per turn; see the module docstring."""

    def __init__(self, records: ReplyRecords, *, redactor: Redactor | None = None,
                 max_pending: int = MAX_PENDING, gather_seconds: float = GATHER_SECONDS) -> None:
        self.records = records
        self.redactor = redactor or Redactor()
        self._pending: deque[_Turn] = deque()
        self._max_pending = max_pending
        self._gather_seconds = gather_seconds
        self._writer: asyncio.Task[None] | None = None
        self._now = asyncio.Event()  # set: write what is queued without gathering more
        self._early: OrderedDict[tuple[str, str], list[PartStatus]] = OrderedDict()
        self.written = 0

    def begin(self, agent: Agent, context: TurnContext) -> TurnTrace:
        return _Turn(self, agent, context.inbound, context.reason, utc_now())

    def enqueue(self, turn: _Turn) -> None:
        if turn.result is not None:
            turn.early_statuses = self._early_statuses(turn.inbound.conversation_id,
                                                       turn.result.delivered_ids)
        if len(self._pending) >= self._max_pending:
            dropped = self._pending.popleft()
            log.warning("inspector.record_dropped", conversation_id=dropped.inbound.conversation_id,
                        agent=dropped.agent.name, max_pending=self._max_pending)
        self._pending.append(turn)
        if self._writer is None or self._writer.done():
            self._now = asyncio.Event()  # a flush asked of an earlier writer is done
            self._writer = asyncio.get_running_loop().create_task(self._write_pending())

    async def _write_pending(self) -> None:
        await set_within(self._now, self._gather_seconds)
        delay = 0.05
        while self._pending:
            batch = list(self._pending)
            started = time.perf_counter()
            try:
                self.written += await self.records.add(batch)
            except UnrecordableTurn as exc:  # retrying would fail the same way: give it up
                self._give_up(exc)
                continue
            except Exception as exc:  # the store is down or refused: keep them, retry later
                log.warning("inspector.record_write_failed", pending=len(self._pending),
                            error=str(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            for turn in batch:
                with contextlib.suppress(ValueError):  # dropped meanwhile (queue was full)
                    self._pending.remove(turn)
            log.debug("inspector.recorded", count=len(batch),
                      ms=round((time.perf_counter() - started) * 1000, 2))

    def hold_status(self, conversation_id: str, platform_id: str, status: PartStatus) -> None:
        """Keep a platform's status of a posted part for the record of its turn, which is
        built when the turn ends: a status can come back while the turn still runs (a hand-off,
        a second reply). Released once the status is noted on a written record."""
        key = (conversation_id, platform_id)
        self._early[key] = [*self._early.pop(key, []), status]
        while len(self._early) > MAX_EARLY_STATUSES:
            self._early.popitem(last=False)

    def release_status(self, conversation_id: str, platform_id: str) -> None:
        self._early.pop((conversation_id, platform_id), None)

    def _early_statuses(self, conversation_id: str, platform_ids: Sequence[str]
                        ) -> dict[str, Any] | None:
        """The held statuses of a finished turn's posted parts, as its record keeps them (the
        furthest along of each), taken from the held ones."""
        statuses: dict[str, Any] | None = None
        for platform_id in platform_ids:
            for status in self._early.pop((conversation_id, platform_id), []):
                statuses = advanced(statuses, platform_id, status) or statuses
        return statuses

    def _give_up(self, failure: UnrecordableTurn) -> None:
        turn = failure.turn
        with contextlib.suppress(ValueError):  # dropped meanwhile (queue was full)
            self._pending.remove(turn)
        log.error("inspector.record_unbuildable", conversation_id=turn.inbound.conversation_id,
                  agent=turn.agent.name, inbound_id=turn.inbound.id, error=str(failure),
                  note="this turn has no reply record; the others are still written")

    async def flush(self) -> None:
        """Write every queued record now and wait until it is written (tests, shutdown,
        `inspect` after a run)."""
        self._now.set()
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def close(self, *, time_limit: float = 10.0) -> None:
        """Write what is queued (for at most `time_limit` seconds), then stop."""
        if self._writer is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(time_limit):
                await self.flush()
        if not self._writer.done():
            log.warning("inspector.records_unwritten", pending=len(self._pending))
            await cancel_and_wait(self._writer)


class StatusesAfterRecords:
    """The reply records as the keeper of a platform's statuses of posted replies
    (`DeliveryStatuses`). A platform's first status (WhatsApp's "sent") can come back before
    the record it belongs on is written: while its turn still runs (the record is built when
    the turn ends), or while the record gathers for `GATHER_SECONDS` before its write. So a
    status is first held for a record still to be built (`ReplyRecorder.hold_status`), then
    noted once the recorder's queued records are written; the wait is bounded by `patience`
    (the database may be away, and the platform's callback waits). A status noted on a written
    record is no longer held; one that found no record waits for its turn's."""

    def __init__(self, records: ReplyRecords, recorder: ReplyRecorder, *,
                 patience: float = 1.0) -> None:
        self.records = records
        self.recorder = recorder
        self.patience = patience

    async def note_delivery(self, conversation_id: str, platform_id: str,
                            status: PartStatus) -> bool:
        self.recorder.hold_status(conversation_id, platform_id, status)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.patience):
                await self.recorder.flush()
        noted = await self.records.note_delivery(conversation_id, platform_id, status)
        if noted:
            self.recorder.release_status(conversation_id, platform_id)
        return noted
