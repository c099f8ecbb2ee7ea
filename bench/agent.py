"""What Threadline itself adds to a turn, with a model that answers instantly.

Prints, on SQLite (and PostgreSQL when THREADLINE_TEST_PG_URL is set; otherwise a line says it
was skipped):
- platform overhead per turn, p50/p99: inbound message -> model request sent (routing, storing
  the inbound turn, assembling the prompt), and model reply -> outbound turn stored;
- turns per second over 100 concurrent conversations through one Team;
- on PostgreSQL, the same over 1, 2 and 4 worker processes sharing the database (each turn is
  received by one worker, round robin, as behind a load balancer; any worker may answer it:
  whoever owns its conversation). The ratio to one process says whether it scales.

Every turn goes the whole way: recorded in the inbox, owned, routed, answered, both turns
stored, marked answered.

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

from threadline.agents.agent import Agent  # noqa: E402
from threadline.agents.llm import ModelRequest, ModelResponse  # noqa: E402
from threadline.agents.team import Team  # noqa: E402
from threadline.history import SqlConversationStore  # noqa: E402
from threadline.history.assembler import assemble_prompt  # noqa: E402
from threadline.history.model import Participant, StoredMessage  # noqa: E402

SEQUENTIAL_CONVERSATIONS = 10
TURNS_PER_CONVERSATION = 40
CONCURRENT_CONVERSATIONS = 100
CONCURRENT_TURNS = 5
USERS = [Participant(kind="user", id=f"U{i}", display_name=f"User {i}") for i in range(3)]


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


async def overhead(url: str) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per-turn overhead before and after the model, in milliseconds, one turn at a time."""
    async with SqlConversationStore(url) as store:
        model = InstantModel()
        team = Team([Agent(name="support", conversation_history=store, provider=model)])
        before: list[float] = []
        after: list[float] = []
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(SEQUENTIAL_CONVERSATIONS):
                started = time.perf_counter()
                await team.handle(message(f"seq{c}", turn))
                finished = time.perf_counter()
                before.append((model.requested[-1] - started) * 1000)
                after.append((finished - model.replied[-1]) * 1000)
        await team.stop()
        appends, assembles = await components(store)
    warm = SEQUENTIAL_CONVERSATIONS * 2  # the first turns pay for imports and connections
    return before[warm:], after[warm:], appends, assembles


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


async def report(label: str, url: str) -> None:
    before, after, appends, assembles = await overhead(url)
    rate = await throughput(url)
    print(f"{label}: inbound -> model request  p50 {statistics.median(before):6.2f} ms   "
          f"p99 {percentile(before, 0.99):6.2f} ms   ({len(before)} turns)")
    print(f"{label}: model reply -> stored     p50 {statistics.median(after):6.2f} ms   "
          f"p99 {percentile(after, 0.99):6.2f} ms")
    total = [b + a for b, a in zip(before, after, strict=True)]
    print(f"{label}: overhead per turn         p50 {statistics.median(total):6.2f} ms   "
          f"p99 {percentile(total, 0.99):6.2f} ms")
    print(f"{label}:   of which store.append        p50 {statistics.median(appends):6.2f} ms   "
          f"p99 {percentile(appends, 0.99):6.2f} ms   (two per turn: inbound, outbound)")
    print(f"{label}:   of which assemble_prompt     p50 {statistics.median(assembles):6.2f} ms   "
          f"p99 {percentile(assembles, 0.99):6.2f} ms   (one per turn, before the model)")
    print(f"{label}: {rate:,.0f} turns/s over {CONCURRENT_CONVERSATIONS} concurrent "
          f"conversations ({CONCURRENT_TURNS} turns each, answered and both turns stored)")


async def worker(url: str, index: int, workers: int) -> None:
    """One worker process of the scaling run: receive its share, answer whatever it owns."""
    from threadline.locks import PostgresConversationLock

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


async def scaling(base: str, workers: int) -> float:
    """Turns per second when `workers` processes share one PostgreSQL database."""
    url, schema = await postgres_url(base)
    try:
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
    finally:
        await drop_schema(base, schema)


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
    one = await scaling(base, 1)
    for workers in (1, 2, 4):
        rate = one if workers == 1 else await scaling(base, workers)
        print(f"PostgreSQL, {workers} worker process(es): {rate:,.0f} turns/s over "
              f"{CONCURRENT_CONVERSATIONS} conversations ({rate / one:.2f}x one process)")


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if sys.argv[1:2] == ["--worker"]:
        asyncio.run(worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    else:
        asyncio.run(main())
