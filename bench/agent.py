"""What Threadline itself adds to a turn, with a model that answers instantly.

Prints, on SQLite (and PostgreSQL when THREADLINE_TEST_PG_URL is set; otherwise a line says it
was skipped):
- platform overhead per turn, p50/p99: inbound message -> model request sent (routing, storing
  the inbound turn, assembling the prompt), and model reply -> outbound turn stored;
- the same with reply records on (the inspector's recorder observing the agent), the extra cost
  per turn (target: p99 under 15 ms on SQLite) and the size of a record per reply;
- the same with spend accounting on (three daily budgets: each turn reserves and settles its
  tokens in the store's database);
- turns per second over 100 concurrent conversations through one Team, records off and on;
- on SQLite, the whole turn beside the OpenAI Agents SDK's `Runner` + `SQLiteSession` on the same
  shape with the same instant model (the `bench` extra installs it), alternated in one run;
- on SQLite, the Anthropic and OpenAI-compatible providers side by side: a whole turn through
  the real SDK to a fake server on 127.0.0.1 (same scripted reply), and the provider call alone;
- on PostgreSQL, the same over 1, 2 and 4 worker processes sharing the database (each turn is
  received by one worker, round robin, as behind a load balancer; any worker may answer it:
  whoever owns its conversation). The ratio to one process says whether it scales.

Every turn goes the whole way: recorded in the inbox, owned, routed, answered, both turns
stored, marked answered.

Conversations grow as the run goes (up to TURNS_PER_CONVERSATION human turns each, so the
assembler reads real histories). Each figure is one run on this machine: orders of magnitude.

    .venv/bin/python bench/agent.py
    .venv/bin/python bench/agent.py --per-turn   # only the per-turn overhead beside the peer
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
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
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.operations import SqlRunner  # noqa: E402
from threadline.backends.sql.records import SqlReplyRecords  # noqa: E402
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.history.assembler import assemble_prompt  # noqa: E402
from threadline.history.model import Participant, StoredMessage  # noqa: E402
from threadline.history.prompt import PromptMessage  # noqa: E402
from threadline.inspector import ReplyRecorder  # noqa: E402
from threadline.interceptors.base import Interceptor  # noqa: E402
from threadline.spend import (  # noqa: E402
    Charge,
    DailyBudgets,
    Spend,  # noqa: E402
)
from threadline.spend.limit import SpendLimitInterceptor  # noqa: E402
from threadline.team import Team  # noqa: E402

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


def _record_sizes(conn: SqlRunner) -> list[int]:
    rows = conn.rows("SELECT length(detail_json) + length(reply) + 300 FROM "
                     "threadline_reply_records", {})
    return [int(row[0]) for row in rows]


async def record_sizes(store: SqlConversationStore) -> list[int]:
    """Bytes per stored record: the detail JSON and reply, plus about 300 for the columns."""
    return await store.run("measure records", _record_sizes)


def spend_limit(store: SqlConversationStore) -> list[Interceptor]:
    return [SpendLimitInterceptor(SqlSpendLedger(store), budgets=BUDGETS)]


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


async def records_cost(url_off: str, url_on: str
                       ) -> tuple[list[float], list[float], list[float], list[int]]:
    """Turn time in ms without and with records, in pairs (same history size, same moment),
    and the time the record's background write took after each recorded turn.

    The two teams answer the same turns one after the other, first one then the other in
    turn, so the machine's noise (2 shared cores) falls on both alike. After a recorded turn
    the benchmark waits for its record to be written (timed apart), so the write never lands
    on the other team's turn; in production it runs while the next turns are answered.
    """
    async with SqlConversationStore(url_off) as plain, SqlConversationStore(url_on) as stored:
        recorder = ReplyRecorder(SqlReplyRecords(stored))
        teams = [Team([Agent(name="support", conversation_history=plain,
                             provider=InstantModel())]),
                 Team([Agent(name="support", conversation_history=stored,
                             provider=InstantModel(), observer=recorder)])]
        times: list[list[float]] = [[], []]
        writes: list[float] = []
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(SEQUENTIAL_CONVERSATIONS):
                order = (0, 1) if (turn + c) % 2 == 0 else (1, 0)
                for which in order:
                    started = time.perf_counter()
                    await teams[which].handle(message(f"seq{c}", turn))
                    finished = time.perf_counter()
                    times[which].append((finished - started) * 1000)
                    if which == 1:
                        await recorder.flush()
                        writes.append((time.perf_counter() - finished) * 1000)
        for team in teams:
            await team.stop()
        await recorder.close()
        sizes = await record_sizes(stored)
    warm = SEQUENTIAL_CONVERSATIONS * 2
    return times[0][warm:], times[1][warm:], writes[warm:], sizes


async def ledger_round_trips(url: str) -> list[float]:
    """The spend ledger alone, in ms: one reserve and one settle on three capped rows."""
    async with SqlConversationStore(url) as store:
        ledger = SqlSpendLedger(store)
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


def overhead_line(label: str, before: list[float], after: list[float]) -> str:
    total = [b + a for b, a in zip(before, after, strict=True)]
    return (f"{label} p50 {statistics.median(total):6.2f} ms   "
            f"p99 {percentile(total, 0.99):6.2f} ms")


async def throughput(url: str, *, record: bool = False) -> float:
    """Human turns answered per second, 100 conversations at once, 5 turns each."""
    async with SqlConversationStore(url) as store:
        recorder = ReplyRecorder(SqlReplyRecords(store)) if record else None
        team = Team([Agent(name="support", conversation_history=store, provider=InstantModel(),
                           observer=recorder)])
        await team.handle(message("warm-up", 0))
        arrivals = [message(f"con{c}", t) for t in range(CONCURRENT_TURNS)
                    for c in range(CONCURRENT_CONVERSATIONS)]
        started = time.perf_counter()
        await asyncio.gather(*(team.handle(m) for m in arrivals))
        elapsed = time.perf_counter() - started
        await team.stop()
        if recorder is not None:
            await recorder.close()
    return len(arrivals) / elapsed


async def whole_turns(url: str, *, replicas: bool = False) -> list[float]:
    """Whole turns in ms through `Team.handle` with an instant model (the model's own time is
    nil, so this is our per-turn overhead), one turn at a time, on the peer's shape.
    `replicas` (PostgreSQL): with the conversation lock a deployment of replicas uses."""
    from threadline.backends.sql.locks import PostgresConversationLock

    async with SqlConversationStore(url) as store:
        lock = PostgresConversationLock(url) if replicas else None
        team = Team([Agent(name="support", conversation_history=store, provider=InstantModel())],
                    lock=lock)
        timings: list[float] = []
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(SEQUENTIAL_CONVERSATIONS):
                started = time.perf_counter()
                await team.handle(message(f"seq{c}", turn))
                timings.append((time.perf_counter() - started) * 1000)
        await team.stop()
        if lock is not None:
            await lock.close()
    return timings[SEQUENTIAL_CONVERSATIONS * 2:]


async def against_the_agents_sdk(folder: Path, fresh: Callable[[], Awaitable[str]]) -> None:
    """Our per-turn overhead beside the OpenAI Agents SDK `Runner` + `SQLiteSession`, same
    shape, alternated three times in this run (compare only within one run)."""
    try:
        from peers import agents_sdk_turns
    except ImportError as exc:
        print(f"SQLite: against the Agents SDK: skipped ({exc}; pip install -e '.[bench]')")
        return
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(3):
        ours += await whole_turns(await fresh())
        theirs += await agents_sdk_turns(folder, SEQUENTIAL_CONVERSATIONS,
                                         TURNS_PER_CONVERSATION)
    mine, peer = statistics.median(ours), statistics.median(theirs)
    print(f"SQLite: per-turn overhead, instant model: Threadline p50 {mine:6.2f} ms   "
          f"p99 {percentile(ours, 0.99):6.2f} ms;   Agents SDK Runner + SQLiteSession p50 "
          f"{peer:6.2f} ms   p99 {percentile(theirs, 0.99):6.2f} ms   -> {mine / peer:.2f}x "
          f"({SEQUENTIAL_CONVERSATIONS} conversations x {TURNS_PER_CONVERSATION} turns, "
          "alternated 3 times; ours also keeps a durable inbox, a reply ledger and recall)")


async def per_turn_beside_the_agents_sdk(folder: Path) -> None:
    """Only the per-turn overhead beside the Agents SDK, on SQLite and (when
    THREADLINE_TEST_PG_URL is set) on PostgreSQL, where the peer keeps its sessions with
    `SQLAlchemySession` on asyncpg; alternated three times (`--per-turn`)."""
    from peers import agents_sdk_turns

    files = iter(range(1_000))

    async def sqlite_file() -> str:
        return f"sqlite:///{folder / f'turns{next(files)}.db'}"

    await against_the_agents_sdk(folder, sqlite_file)
    base = os.environ.get("THREADLINE_TEST_PG_URL")
    if not base:
        print("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL)")
        return
    from agents.extensions.memory import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    schemas = PostgresSchemas(base)
    try:
        ours: list[float] = []
        replicated: list[float] = []
        theirs: list[float] = []
        for _ in range(3):
            ours += await whole_turns(await schemas.fresh())
            replicated += await whole_turns(await schemas.fresh(), replicas=True)
            url, _, schema = (await schemas.fresh()).partition("?search_path=")
            engine = create_async_engine(url, connect_args={
                "server_settings": {"search_path": schema}})
            theirs += await agents_sdk_turns(
                folder, SEQUENTIAL_CONVERSATIONS, TURNS_PER_CONVERSATION,
                session=lambda cid, engine=engine: SQLAlchemySession(  # type: ignore[misc]
                    cid, engine=engine, create_tables=True))
            await engine.dispose()
    finally:
        await schemas.drop()
    mine, peer = statistics.median(ours), statistics.median(theirs)
    print(f"PostgreSQL: per-turn overhead, instant model: Threadline p50 {mine:6.2f} ms   "
          f"p99 {percentile(ours, 0.99):6.2f} ms;   Agents SDK Runner + SQLAlchemySession "
          f"(asyncpg) p50 {peer:6.2f} ms   p99 {percentile(theirs, 0.99):6.2f} ms   -> "
          f"{mine / peer:.2f}x (alternated 3 times)")
    print(f"PostgreSQL: the same with the replicas' conversation lock: Threadline p50 "
          f"{statistics.median(replicated):6.2f} ms   p99 {percentile(replicated, 0.99):6.2f} ms"
          f"   -> {statistics.median(replicated) / peer:.2f}x")


async def report(label: str, fresh: Callable[[], Awaitable[str]]) -> None:
    """Every figure for one database; `fresh()` gives an empty database for each part."""
    before, after, appends, assembles = await overhead(await fresh())
    spend_before, spend_after, _, _ = await overhead(await fresh(), spend=True)
    ledger = await ledger_round_trips(await fresh())
    rate = await throughput(await fresh())
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
    plain, recorded, writes, sizes = await records_cost(await fresh(), await fresh())
    rate_r = await throughput(await fresh(), record=True)
    print(f"{label}: whole turn, records off    p50 {statistics.median(plain):6.2f} ms   "
          f"p99 {percentile(plain, 0.99):6.2f} ms   (paired with the next line)")
    print(f"{label}: whole turn, records on     p50 {statistics.median(recorded):6.2f} ms   "
          f"p99 {percentile(recorded, 0.99):6.2f} ms   -> records cost p50 "
          f"{statistics.median(recorded) - statistics.median(plain):+.2f} ms, p99 "
          f"{percentile(recorded, 0.99) - percentile(plain, 0.99):+.2f} ms per turn "
          "(target: p99 under 15 ms)")
    awaited = [r + w for r, w in zip(recorded, writes, strict=True)]
    print(f"{label}:   its background write      p50 {statistics.median(writes):6.2f} ms   "
          f"p99 {percentile(writes, 0.99):6.2f} ms   (after the turn, off its path; even "
          f"awaited in the turn: p99 cost "
          f"{percentile(awaited, 0.99) - percentile(plain, 0.99):+.2f} ms)")
    print(f"{label}: record size per reply       mean {statistics.fmean(sizes) / 1024:5.1f} KiB"
          f"   max {max(sizes) / 1024:5.1f} KiB   ({len(sizes)} records; the prompt of up to "
          f"{TURNS_PER_CONVERSATION * 2} turns, exact request, reply)")
    print(f"{label}: {rate_r:,.0f} turns/s over {CONCURRENT_CONVERSATIONS} concurrent "
          "conversations with records on")


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


async def worker(url: str, index: int, workers: int) -> None:
    """One worker process of the scaling run: receive its share, answer whatever it owns."""
    from threadline.backends.sql.locks import PostgresConversationLock

    async with SqlConversationStore(url) as store:
        lock = PostgresConversationLock(url)
        team = Team([Agent(name="support", conversation_history=store, provider=InstantModel())],
                    lock=lock, scan_interval=0.1)
        team.pipeline.start()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "go"
        arrivals = [message(f"con{c}", t) for t in range(CONCURRENT_TURNS)
                    for c in range(CONCURRENT_CONVERSATIONS)]
        for turn in arrivals[index::workers]:
            await team.pipeline.receive(turn, None)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "stop"
        await team.stop()
        await lock.close()


async def scaling(url: str, workers: int) -> float:
    """Turns per second when `workers` processes share one PostgreSQL database."""
    async with SqlConversationStore(url) as store:  # migrated once, before the workers
        processes = [await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--worker", url, str(i), str(workers),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
            for i in range(workers)]
        for process in processes:
            assert process.stdout is not None
            await process.stdout.readline()  # ready
        total = CONCURRENT_CONVERSATIONS * CONCURRENT_TURNS
        started = time.perf_counter()
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
            await process.stdin.drain()
        answered = 0
        while answered < total:
            await asyncio.sleep(0.02)
            answered = await store.count() // 2  # each answered turn stores two
        elapsed = time.perf_counter() - started
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(b"stop\n")
            await process.stdin.drain()
            await process.wait()
    return total / elapsed


class PostgresSchemas:
    """Fresh PostgreSQL schemas for one run, dropped at the end."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.dsn = base.replace("postgresql+asyncpg://", "postgresql://")
        self.schemas: list[str] = []

    async def fresh(self) -> str:
        import asyncpg

        schema = "bench_" + uuid.uuid4().hex[:10]
        connection = await asyncpg.connect(self.dsn)
        await connection.execute(f"CREATE SCHEMA {schema}")
        await connection.close()
        self.schemas.append(schema)
        separator = "&" if "?" in self.base else "?"
        return f"{self.base}{separator}search_path={schema}"

    async def drop(self) -> None:
        import asyncpg

        connection = await asyncpg.connect(self.dsn)
        for schema in self.schemas:
            await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await connection.close()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        files = iter(range(1_000))

        async def sqlite_file() -> str:
            return f"sqlite+aiosqlite:///{Path(folder) / f'bench{next(files)}.db'}"

        await report("SQLite", sqlite_file)
        await against_the_agents_sdk(Path(folder), sqlite_file)
        await providers_side_by_side(Path(folder))
    base = os.environ.get("THREADLINE_TEST_PG_URL")
    if not base:
        print("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL, for example "
              "postgresql+asyncpg://postgres@127.0.0.1:5432/test)")
        return
    schemas = PostgresSchemas(base)
    try:
        await report("PostgreSQL", schemas.fresh)
        one = await scaling(await schemas.fresh(), 1)
        for workers in (1, 2, 4):
            rate = one if workers == 1 else await scaling(await schemas.fresh(), workers)
            print(f"PostgreSQL, {workers} worker process(es): {rate:,.0f} turns/s over "
                  f"{CONCURRENT_CONVERSATIONS} conversations ({rate / one:.2f}x one process)")
    finally:
        await schemas.drop()


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if sys.argv[1:2] == ["--worker"]:
        asyncio.run(worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1:2] == ["--per-turn"]:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(per_turn_beside_the_agents_sdk(Path(folder)))
    else:
        asyncio.run(main())
