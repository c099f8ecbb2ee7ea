"""What tracing costs a turn: off beside on (exporting over OTLP/HTTP to a receiver on
127.0.0.1), in one run, with a model that answers instantly and calls one tool per turn.

Prints, on SQLite:
- whole turns through `Team.handle`, p50/p99 in ms, tracing off and on, and on/off as a ratio.
  The two are alternated turn by turn (same histories, same moment), so the machine's noise
  (2 shared cores) falls on both alike; spans are exported by the SDK's background thread, as
  in production, and the receiver decodes every batch;
- the spans the receiver got per traced turn (each turn is one trace);
- what the off path costs: every tracing call one turn makes, timed alone with tracing off,
  beside the turn's own time (tracing off must be today's figure: this is the difference).

    .venv/bin/python bench/tracing.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402

from tests.fakes.otlp import FakeOtlp  # noqa: E402
from threadline.agents.agent import Agent  # noqa: E402
from threadline.agents.llm import ModelRequest, ModelResponse  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history.inbox import InboxTurn  # noqa: E402
from threadline.history.model import Participant, StoredMessage, ToolCall  # noqa: E402
from threadline.inspector.redaction import redactor_for  # noqa: E402
from threadline.team import Team  # noqa: E402
from threadline.tracing import TracingOptions, spans, start_tracing  # noqa: E402

CONVERSATIONS = 10
TURNS_PER_CONVERSATION = 40
ROUNDS = 3
PERSON = Participant(kind="user", id="U1", display_name="User 1")


async def lookup_order(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id} shipped on Monday"


class InstantModel:
    """Asks for `lookup_order` once, then answers at once: two model calls and a tool a turn."""

    provider_name = "instant"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if not last.tool_exchanges:
            return ModelResponse(text="", stop_reason="tool_use", tool_calls=(
                ToolCall(id=f"call-{len(request.messages)}", name="lookup_order",
                         input={"order_id": "4417"}),))
        return ModelResponse(text=f"Noted: {last.content[-60:]}", id="reply-1")


def message(conversation: str, turn: int) -> StoredMessage:
    return StoredMessage(
        conversation_id=conversation, participant=PERSON,
        content=f"@support where is order {4400 + turn}?",
        metadata={"channel_type": "local", "message_id": f"{conversation}-{turn}"})


def team(store: SqlConversationStore) -> Team:
    return Team([Agent(name="support", conversation_history=store, provider=InstantModel(),
                       tools=[lookup_order])])


async def alternated(folder: Path, otlp: FakeOtlp) -> tuple[list[float], list[float], int]:
    """Turn times in ms with tracing off and on, alternated; and the turns traced."""
    tracing = start_tracing(TracingOptions(enabled=True, endpoint=otlp.url),
                            redactor=redactor_for(), set_global=False)
    assert tracing is not None
    tracer = tracing.provider.get_tracer("threadline")
    times: dict[bool, list[float]] = {False: [], True: []}
    traced = 0
    async with SqlConversationStore(f"sqlite:///{folder / 'off.db'}") as plain, \
            SqlConversationStore(f"sqlite:///{folder / 'on.db'}") as traced_store:
        teams = {False: team(plain), True: team(traced_store)}
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(CONVERSATIONS):
                for on in ((False, True) if (turn + c) % 2 == 0 else (True, False)):
                    if on:
                        spans.activate(tracer, capture_content=False)
                    else:
                        spans.deactivate()
                    started = time.perf_counter()
                    await teams[on].handle(message(f"seq{c}", turn))
                    times[on].append((time.perf_counter() - started) * 1000)
                    traced += on
        spans.deactivate()
        for each in teams.values():
            await each.stop()
    await asyncio.to_thread(tracing.stop)
    warm = CONVERSATIONS * 2  # the first turns pay for imports and connections
    return times[False][warm:], times[True][warm:], traced


def off_path_microseconds(repeat: int = 100_000) -> float:
    """Every tracing call one turn makes (a tool round: two model calls), with tracing off."""
    spans.deactivate()
    inbound = message("off", 1)
    turn = InboxTurn(message=inbound, channel=None)
    request = ModelRequest(model="m", system="", messages=())
    call = ToolCall(id="c", name="lookup_order", input={})
    response = ModelResponse(text="")
    started = time.perf_counter()
    for _ in range(repeat):
        with spans.turn_span(turn, 1) as outer:
            spans.routed([("a", "mention")])
            with spans.agent_span("a", "c", reason=None, model="m") as agent:
                spans.current_trace_id()
                for _round in range(2):
                    with spans.model_span(request, None) as chat:
                        chat.answered(response)
                with spans.tool_span(call, "") as tool:
                    tool.tool_result("", is_error=False)
                with spans.deliver_span("a") as deliver:
                    deliver.set({"threadline.delivered_ids": []})
                agent.set({})
            outer.set({"threadline.outcome": "answered"})
    return (time.perf_counter() - started) / repeat * 1e6


def line(label: str, timings: list[float]) -> str:
    return (f"{label:<32} p50 {statistics.median(timings):6.2f} ms   "
            f"p99 {percentile(timings, 0.99):6.2f} ms")


async def main() -> None:
    off: list[float] = []
    on: list[float] = []
    async with FakeOtlp() as otlp:
        traced = 0
        for number in range(ROUNDS):
            with tempfile.TemporaryDirectory() as folder:
                more_off, more_on, more_traced = await alternated(Path(folder), otlp)
            off += more_off
            on += more_on
            traced += more_traced
            print(f"round {number + 1} of {ROUNDS}: {len(more_on)} traced turns", flush=True)
        spans_per_turn = len(otlp.spans) / traced
        turns_exported = len(otlp.named("threadline.turn"))
    print(f"SQLite, {CONVERSATIONS} conversations x {TURNS_PER_CONVERSATION} turns, "
          f"alternated turn by turn, {ROUNDS} rounds; each turn: 2 model calls, 1 tool")
    print(line("whole turn, tracing off", off))
    print(line("whole turn, tracing on (OTLP)", on))
    print(f"{'on / off':<32} p50 {statistics.median(on) / statistics.median(off):6.2f}x   "
          f"p99 {percentile(on, 0.99) / percentile(off, 0.99):6.2f}x")
    print(f"spans exported: {spans_per_turn:.1f} per traced turn; turn spans received "
          f"{turns_exported} of {traced}")
    cost = off_path_microseconds()
    print(f"tracing off: every tracing call of one turn {cost:.2f} us "
          f"({cost / 1000 / statistics.median(off) * 100:.3f}% of the p50 turn)")


if __name__ == "__main__":
    asyncio.run(main())
