"""What Threadline itself adds to a turn, with a model that answers instantly.

Prints, on SQLite (and PostgreSQL when THREADLINE_TEST_PG_URL is set; otherwise a line says it
was skipped):
- platform overhead per turn, p50/p99: inbound message -> model request sent (routing, storing
  the inbound turn, assembling the prompt), and model reply -> outbound turn stored;
- the same with spend accounting on (three daily budgets: each turn reserves and settles its
  tokens in the store's database);
- turns per second over 100 concurrent conversations through one Team;
- on SQLite, the Anthropic and OpenAI-compatible providers side by side: a whole turn through
  the real SDK to a fake server on 127.0.0.1 (same scripted reply), and the provider call alone.

Conversations grow as the run goes (up to TURNS_PER_CONVERSATION human turns each, so the
assembler reads real histories). Each figure is one run on this machine: orders of magnitude.

    .venv/bin/python bench/agent.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402

from tests.fakes.anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.anthropic import text as anthropic_text  # noqa: E402
from tests.fakes.openai import FakeOpenAI  # noqa: E402
from tests.fakes.openai import text as openai_text  # noqa: E402
from threadline.agents.agent import Agent  # noqa: E402
from threadline.agents.anthropic_provider import AnthropicProvider  # noqa: E402
from threadline.agents.llm import ModelProvider, ModelRequest, ModelResponse  # noqa: E402
from threadline.agents.openai_provider import OpenAIProvider  # noqa: E402
from threadline.agents.team import Team  # noqa: E402
from threadline.history import SqlConversationStore  # noqa: E402
from threadline.history.assembler import assemble_prompt  # noqa: E402
from threadline.history.model import Participant, StoredMessage  # noqa: E402
from threadline.history.prompt import PromptMessage  # noqa: E402
from threadline.interceptors.base import Interceptor  # noqa: E402
from threadline.interceptors.spend_limit import SpendLimitInterceptor  # noqa: E402
from threadline.spend import Charge, DailyBudgets, Spend, SpendLedger  # noqa: E402

SEQUENTIAL_CONVERSATIONS = 10
TURNS_PER_CONVERSATION = 40
CONCURRENT_CONVERSATIONS = 100
CONCURRENT_TURNS = 5
PROVIDER_TURNS = 200
USERS = [Participant(kind="user", id=f"U{i}", display_name=f"User {i}") for i in range(3)]
# High enough never to refuse: the figure is the cost of checking and recording.
BUDGETS = DailyBudgets(per_agent=10**12, per_conversation=10**12, per_person=10**12)


class InstantModel:
    """Answers at once and notes when each request arrived and each reply left."""

    def __init__(self) -> None:
        self.requested: list[float] = []
        self.replied: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requested.append(time.perf_counter())
        text = f"Noted: {request.messages[-1].content[-60:]}"
        self.replied.append(time.perf_counter())
        return ModelResponse(text=text)


def message(conversation: str, turn: int) -> StoredMessage:
    return StoredMessage(
        conversation_id=conversation, participant=USERS[turn % len(USERS)],
        content=f"@support question {turn} about order {4400 + turn}: when will it arrive?",
        metadata={"channel_type": "local", "message_id": f"{conversation}-{turn}"},
    )


async def components(store: SqlConversationStore) -> tuple[list[float], list[float]]:
    """The store and assembler alone, in ms: one append, one prompt assembly (same histories)."""
    appends: list[float] = []
    assembles: list[float] = []
    for i in range(200):
        conversation = f"seq{i % SEQUENTIAL_CONVERSATIONS}"
        started = time.perf_counter()
        await assemble_prompt(store, conversation, "support", "support")
        assembles.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await store.append(message(f"extra{i % SEQUENTIAL_CONVERSATIONS}", i))
        appends.append((time.perf_counter() - started) * 1000)
    return appends, assembles


def spend_limit(store: SqlConversationStore) -> list[Interceptor]:
    return [SpendLimitInterceptor(SpendLedger(store), budgets=BUDGETS)]


async def overhead(url: str, *, spend: bool = False
                   ) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per-turn overhead before and after the model, in milliseconds, one turn at a time."""
    async with SqlConversationStore(url) as store:
        model = InstantModel()
        team = Team([Agent(name="support", conversation_history=store, provider=model,
                           interceptors=spend_limit(store) if spend else ())])
        before: list[float] = []
        after: list[float] = []
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(SEQUENTIAL_CONVERSATIONS):
                started = time.perf_counter()
                await team.handle(message(f"{'spend' if spend else ''}seq{c}", turn))
                finished = time.perf_counter()
                before.append((model.requested[-1] - started) * 1000)
                after.append((finished - model.replied[-1]) * 1000)
        await team.stop()
        appends, assembles = await components(store)
    warm = SEQUENTIAL_CONVERSATIONS * 2  # the first turns pay for imports and connections
    return before[warm:], after[warm:], appends, assembles


async def ledger_round_trips(url: str) -> list[float]:
    """The spend ledger alone, in ms: one reserve and one settle on three capped rows."""
    async with SqlConversationStore(url) as store:
        ledger = SpendLedger(store)
        charges = [Charge("agent", "support", BUDGETS.per_agent),
                   Charge("conversation", "ledger-bench", BUDGETS.per_conversation),
                   Charge("person", "local:U1", BUDGETS.per_person)]
        timings: list[float] = []
        for _ in range(300):
            started = time.perf_counter()
            await ledger.reserve(day="bench", charges=charges, tokens=100)
            await ledger.settle(day="bench", charges=charges, reserved=100,
                                spend=Spend(input_tokens=80, output_tokens=20))
            timings.append((time.perf_counter() - started) * 1000)
    return timings


async def throughput(url: str) -> float:
    """Human turns answered per second, 100 conversations at once, 5 turns each."""
    async with SqlConversationStore(url) as store:
        team = Team([Agent(name="support", conversation_history=store, provider=InstantModel())])
        await team.handle(message("warm-up", 0))
        arrivals = [message(f"con{c}", t) for t in range(CONCURRENT_TURNS)
                    for c in range(CONCURRENT_CONVERSATIONS)]
        started = time.perf_counter()
        await asyncio.gather(*(team.handle(m) for m in arrivals))
        elapsed = time.perf_counter() - started
        await team.stop()
    return len(arrivals) / elapsed


def overhead_line(label: str, before: list[float], after: list[float]) -> str:
    total = [b + a for b, a in zip(before, after, strict=True)]
    return (f"{label} p50 {statistics.median(total):6.2f} ms   "
            f"p99 {percentile(total, 0.99):6.2f} ms")


async def report(label: str, url: str) -> None:
    before, after, appends, assembles = await overhead(url)
    spend_before, spend_after, _, _ = await overhead(url, spend=True)
    ledger = await ledger_round_trips(url)
    rate = await throughput(url)
    print(f"{label}: inbound -> model request  p50 {statistics.median(before):6.2f} ms   "
          f"p99 {percentile(before, 0.99):6.2f} ms   ({len(before)} turns)")
    print(f"{label}: model reply -> stored     p50 {statistics.median(after):6.2f} ms   "
          f"p99 {percentile(after, 0.99):6.2f} ms")
    print(overhead_line(f"{label}: overhead per turn        ", before, after))
    print(overhead_line(f"{label}:   with spend accounting  ", spend_before, spend_after)
          + "   (3 daily budgets: reserve before the model, settle after)")
    print(f"{label}:   of which store.append        p50 {statistics.median(appends):6.2f} ms   "
          f"p99 {percentile(appends, 0.99):6.2f} ms   (two per turn: inbound, outbound)")
    print(f"{label}:   of which assemble_prompt     p50 {statistics.median(assembles):6.2f} ms   "
          f"p99 {percentile(assembles, 0.99):6.2f} ms   (one per turn, before the model)")
    print(f"{label}:   of which spend ledger        p50 {statistics.median(ledger):6.2f} ms   "
          f"p99 {percentile(ledger, 0.99):6.2f} ms   (reserve and settle, with spend on)")
    print(f"{label}: {rate:,.0f} turns/s over {CONCURRENT_CONVERSATIONS} concurrent "
          f"conversations ({CONCURRENT_TURNS} turns each, answered and both turns stored)")


async def provider_turns(url: str, provider: ModelProvider) -> tuple[list[float], list[float]]:
    """Whole turns (inbound -> reply stored) and provider calls alone, in ms, one at a time."""
    async with SqlConversationStore(url) as store:
        team = Team([Agent(name="support", conversation_history=store, provider=provider,
                           model="bench-model", interceptors=spend_limit(store))])
        turns: list[float] = []
        for turn in range(PROVIDER_TURNS):
            started = time.perf_counter()
            await team.handle(message(f"prov{turn % SEQUENTIAL_CONVERSATIONS}", turn))
            turns.append((time.perf_counter() - started) * 1000)
        await team.stop()
        request = ModelRequest(model="bench-model", system="You help.",
                               messages=[PromptMessage("user", "where is order 4401?")])
        calls: list[float] = []
        for _ in range(PROVIDER_TURNS):
            started = time.perf_counter()
            await provider.complete(request)
            calls.append((time.perf_counter() - started) * 1000)
    warm = SEQUENTIAL_CONVERSATIONS
    return turns[warm:], calls[warm:]


async def providers_side_by_side(folder: Path) -> None:
    """The two SDK providers against their fake servers on 127.0.0.1, same reply each turn."""
    reply = "Order 4401 shipped on Monday and arrives on Thursday."
    async with FakeAnthropic() as anthropic, FakeOpenAI() as openai:
        anthropic.script(*[anthropic_text(reply)] * (2 * PROVIDER_TURNS))
        openai.script(*[openai_text(reply)] * (2 * PROVIDER_TURNS))
        contenders: list[tuple[str, ModelProvider]] = [
            ("Anthropic (streamed)", AnthropicProvider(anthropic.client())),
            ("Anthropic (plain)", AnthropicProvider(anthropic.client(), stream=False)),
            ("OpenAI-compatible", OpenAIProvider(openai.client())),
        ]
        for index, (label, provider) in enumerate(contenders):
            url = f"sqlite+aiosqlite:///{folder / f'providers{index}.db'}"
            turns, calls = await provider_turns(url, provider)
            print(f"{label:>21}: whole turn p50 {statistics.median(turns):6.2f} ms  "
                  f"p99 {percentile(turns, 0.99):6.2f} ms   provider call alone "
                  f"p50 {statistics.median(calls):6.2f} ms  p99 {percentile(calls, 0.99):6.2f} "
                  f"ms   (fake server in-process, spend on, SQLite)")


async def postgres_url(base: str) -> tuple[str, str]:
    import asyncpg

    schema = "bench_" + uuid.uuid4().hex[:10]
    dsn = base.replace("postgresql+asyncpg://", "postgresql://")
    connection = await asyncpg.connect(dsn)
    await connection.execute(f"CREATE SCHEMA {schema}")
    await connection.close()
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}search_path={schema}", schema


async def drop_schema(base: str, schema: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    await connection.close()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        await report("SQLite", f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}")
        await providers_side_by_side(Path(folder))
    base = os.environ.get("THREADLINE_TEST_PG_URL")
    if not base:
        print("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL, for example "
              "postgresql+asyncpg://postgres@127.0.0.1:5432/test)")
        return
    url, schema = await postgres_url(base)
    try:
        await report("PostgreSQL", url)
    finally:
        await drop_schema(base, schema)


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())
