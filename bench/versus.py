"""Threadline beside its peers, each measured in the same run on the same machine.

Prints four figures, each with its peer and the ratio:
- `get` of a conversation's newest 50 turns against raw `sqlite3` on the same file (the same
  query on the same index, rows fetched, nothing built; target <= 3x);
- one-writer durable append against the OpenAI Agents SDK's `SQLiteSession` (target >= 1x);
- per-turn overhead with an instant model through the public API (`Threadline`, a local room)
  against the Agents SDK `Runner` with `SQLiteSession` on the same shape, 10 conversations x 40
  turns, alternated three times (target <= 1x; Threadline does more: a durable inbox, a reply
  ledger, recall, reply records);
- the same per-turn overhead on PostgreSQL (when THREADLINE_TEST_PG_URL is set) against the
  Agents SDK `Runner` with `SQLAlchemySession` on an asyncpg engine, the same shape, alternated
  the same way (target <= 1.5x). Each side gets a fresh schema per round, dropped afterwards.

Without the Agents SDK installed the peers' figures are skipped, said so, and ours still print.

    .venv/bin/pip install -e '.[bench]'     # the Agents SDK
    .venv/bin/python bench/versus.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402

from threadline import Threadline  # noqa: E402
from threadline.agents.llm import ModelRequest, ModelResponse  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.schema import SELECT_LIST  # noqa: E402
from threadline.history.model import Participant, StoredMessage  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

CONVERSATIONS, TURNS, ROUNDS = 10, 40, 3
ANN = Participant(kind="user", id="ann", display_name="Ann")


class InstantModel:
    """Answers at once: what a turn costs beyond it is the framework's own work."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=f"Noted: {request.messages[-1].content[-40:]}")


def ms(values: list[float], share: float = 0.5) -> float:
    return percentile(values, share) * 1000


def peer_installed() -> bool:
    """The Agents SDK comes with the `bench` extra; without it only our own figures print."""
    return importlib.util.find_spec("agents") is not None


NO_PEER = "peer skipped: the Agents SDK is not installed (pip install -e '.[bench]')"


# -- get newest 50 --------------------------------------------------------------------------


async def get_newest(folder: Path) -> tuple[float, float]:
    db = folder / "get.db"
    async with SqlConversationStore(f"sqlite:///{db}") as store:
        for c in range(10):
            await store.append_many([StoredMessage(
                conversation_id=f"c{c}", participant=ANN,
                content=f"turn {i} of conversation {c}: where is order {4400 + i}?")
                for i in range(1000)])
        ours = []
        for i in range(2000):
            started = time.perf_counter()
            await store.get(f"c{i % 10}", limit=50)
            ours.append(time.perf_counter() - started)
    raw = []
    with sqlite3.connect(db) as connection:
        sql = (f"SELECT {SELECT_LIST} FROM threadline_messages WHERE conversation_id = ? "
               "AND is_summary = 0 ORDER BY sequence DESC LIMIT 50")
        for i in range(2000):
            started = time.perf_counter()
            connection.execute(sql, (f"c{i % 10}",)).fetchall()
            raw.append(time.perf_counter() - started)
    return ms(ours), ms(raw)


# -- one-writer append ----------------------------------------------------------------------


async def appends(folder: Path, count: int = 3000) -> tuple[float, float | None]:
    async with SqlConversationStore(f"sqlite:///{folder / 'append.db'}") as store:
        started = time.perf_counter()
        for i in range(count):
            await store.append(StoredMessage(conversation_id=f"c{i % 10}", participant=ANN,
                                             content=f"message {i}"))
        ours = count / (time.perf_counter() - started)
    if not peer_installed():
        return ours, None
    from agents import SQLiteSession

    sessions = [SQLiteSession(f"c{c}", str(folder / "peer-append.db")) for c in range(10)]
    started = time.perf_counter()
    for i in range(count):
        await sessions[i % 10].add_items([{"role": "user", "content": f"message {i}"}])
    peer = count / (time.perf_counter() - started)
    for session in sessions:
        session.close()
    return ours, peer


# -- per-turn overhead ----------------------------------------------------------------------


async def threadline_turns(store: str) -> list[float]:
    rooms = {f"r{c}": {"type": "local", "room": f"r{c}"} for c in range(CONVERSATIONS)}
    timings: list[float] = []
    async with Threadline(agents={"support": "You help."}, channels=rooms, store=store,
                          provider=InstantModel(), inspector={"console": False}) as app:
        for turn in range(TURNS):
            for room in rooms:
                started = time.perf_counter()
                replies = await app.say(room, f"@support question {turn} about order {turn}")
                timings.append(time.perf_counter() - started)
                assert replies, "no reply"
    return timings


def instant_agents_model() -> Any:
    from agents.items import ModelResponse as PeerResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class InstantPeerModel(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> PeerResponse:
            last = input[-1]["content"] if isinstance(input, list) else input
            text = ResponseOutputText(type="output_text", text=f"Noted: {str(last)[-40:]}",
                                      annotations=[])
            message = ResponseOutputMessage(id="msg", type="message", role="assistant",
                                            status="completed", content=[text])
            return PeerResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return InstantPeerModel()


async def peer_run(sessions: list[Any]) -> list[float]:
    """The Agents SDK's turns over the given sessions, one per conversation, timed."""
    from agents import Agent, RunConfig, Runner

    agent = Agent(name="support", instructions="You help.", model=instant_agents_model())
    config = RunConfig(tracing_disabled=True)
    timings: list[float] = []
    for turn in range(TURNS):
        for session in sessions:
            started = time.perf_counter()
            await Runner.run(agent, f"question {turn} about order {turn}", session=session,
                             run_config=config)
            timings.append(time.perf_counter() - started)
    return timings


async def peer_turns(folder: Path) -> list[float]:
    from agents import SQLiteSession

    path = str(folder / f"peer-{time.monotonic_ns()}.db")
    sessions = [SQLiteSession(f"r{c}", path) for c in range(CONVERSATIONS)]
    timings = await peer_run(sessions)
    for session in sessions:
        session.close()
    return timings


async def peer_turns_pg(url: str) -> list[float]:
    """`SQLAlchemySession` on an asyncpg engine, its tables in the fresh schema `url` names."""
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    base, _, options = url.partition("?")
    schema = options.rsplit("search_path=", 1)[-1]
    engine = create_async_engine(
        base, connect_args={"server_settings": {"search_path": schema}})
    try:
        sessions = [SQLAlchemySession(f"r{c}", engine=engine, create_tables=True)
                    for c in range(CONVERSATIONS)]
        for session in sessions:  # the tables and the pool, before the clock starts
            await session.get_items()
        return await peer_run(sessions)
    finally:
        await engine.dispose()


async def pg_turns(pg: str, turns: Any) -> list[float]:
    """One side's turns on PostgreSQL in a schema of its own, dropped afterwards."""
    from tests.conftest import drop_pg_schema, fresh_pg_schema

    url = await fresh_pg_schema(pg)
    try:
        return list(await turns(url))
    finally:
        await drop_pg_schema(url)


async def our_pg_turns(prepare: Any) -> list[float] | None:
    """Our side's turns on PostgreSQL for a bench that watches them (`pg_turn_calls`,
    `pg_turn_split`): logging kept to warnings, `prepare()` (its watching) called first; None,
    after saying how to set it, without THREADLINE_TEST_PG_URL."""
    pg = os.environ.get("THREADLINE_TEST_PG_URL")
    if not pg:
        print("set THREADLINE_TEST_PG_URL (postgresql+asyncpg://...)")
        return None
    configure_logging("warning")
    prepare()
    return await pg_turns(pg, threadline_turns)


def overhead(label: str, mine: list[float], peer: str, theirs: list[float],
             target: str) -> str:
    line = f"{label}ours p50 {ms(mine):.2f} ms p99 {ms(mine, 0.99):.2f} ms   "
    if not theirs:
        return line + NO_PEER
    return (line + f"{peer} p50 {ms(theirs):.2f} ms p99 {ms(theirs, 0.99):.2f} ms   "
            f"{ms(mine) / ms(theirs):.2f}x (target <= {target})")


async def main() -> None:
    configure_logging("warning")
    peer = peer_installed()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours, raw = await get_newest(folder)
        print(f"get newest 50 turns   ours p50 {ours:.3f} ms   raw sqlite3 p50 {raw:.3f} ms   "
              f"{ours / raw:.2f}x (target <= 3x)")
        ours_rate, peer_rate = await appends(folder)
        print(f"one-writer append     ours {ours_rate:,.0f}/s   " + (
            f"SQLiteSession {peer_rate:,.0f}/s   {ours_rate / peer_rate:.2f}x (target >= 1x)"
            if peer_rate else NO_PEER))
        mine: list[float] = []
        theirs: list[float] = []
        for round_ in range(ROUNDS):
            mine += await threadline_turns(f"sqlite:///{folder / f'turns-{round_}.db'}")
            if peer:
                theirs += await peer_turns(folder)
        print(overhead("per-turn, SQLite      ", mine, "Runner+SQLiteSession", theirs, "1x"))
        pg = os.environ.get("THREADLINE_TEST_PG_URL")
        if not pg:
            print("per-turn, PostgreSQL  skipped (set THREADLINE_TEST_PG_URL)")
            return
        on_pg: list[float] = []
        theirs_pg: list[float] = []
        for _ in range(ROUNDS):
            on_pg += await pg_turns(pg, threadline_turns)
            if peer:
                theirs_pg += await pg_turns(pg, peer_turns_pg)
        print(overhead("per-turn, PostgreSQL  ", on_pg, "Runner+SQLAlchemySession", theirs_pg,
                       "1.5x") + f"   (ours mean {statistics.fmean(on_pg) * 1000:.2f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
