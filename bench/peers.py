"""The stores users would otherwise pick, driven the way bench/store.py drives ours.

Each peer appends one turn per call (one writer) and reads back a session's latest turns.
LangChain's `SQLChatMessageHistory` has no limit: it loads the whole session, as its users do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from figures import percentile


@dataclass(frozen=True)
class PeerFigures:
    """One peer's append rate and its read latency for the last 100 turns of a session."""

    name: str
    appends_per_second: float
    load_p50_ms: float
    load_p99_ms: float


def remove_database(path: Path) -> None:
    """Delete a SQLite file and its WAL companions, so a run starts empty."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def _time_loads(load: Callable[[], Awaitable[object]], repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        await load()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


async def openai_sqlite_session(
    folder: Path, texts: Sequence[tuple[str, str]], *, repeats: int
) -> PeerFigures:
    """The OpenAI Agents SDK's `SQLiteSession`, one session per conversation, on one file."""
    from agents import SQLiteSession

    path = folder / "openai_agents.db"
    remove_database(path)
    sessions: dict[str, SQLiteSession] = {}
    start = time.perf_counter()
    for conversation_id, text in texts:
        session = sessions.get(conversation_id)
        if session is None:
            session = sessions[conversation_id] = SQLiteSession(conversation_id, path)
        await session.add_items([{"role": "user", "content": text}])
    rate = len(texts) / (time.perf_counter() - start)
    first = sessions[texts[0][0]]
    timings = await _time_loads(lambda: first.get_items(limit=100), repeats)
    for session in sessions.values():
        session.close()
    return PeerFigures("OpenAI Agents SQLiteSession", rate, percentile(timings, 0.5),
                       percentile(timings, 0.99))


async def langchain_sql_history(
    folder: Path, texts: Sequence[tuple[str, str]], *, repeats: int
) -> PeerFigures:
    """LangChain's `SQLChatMessageHistory` on SQLite (sync API, as most of its users call it)."""
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.messages import HumanMessage
    from sqlalchemy import create_engine

    path = folder / "langchain.db"
    remove_database(path)
    engine = create_engine(f"sqlite:///{path}")
    histories: dict[str, SQLChatMessageHistory] = {}
    start = time.perf_counter()
    for conversation_id, text in texts:
        history = histories.get(conversation_id)
        if history is None:
            history = histories[conversation_id] = SQLChatMessageHistory(
                session_id=conversation_id, connection=engine)
        history.add_message(HumanMessage(content=text))
    rate = len(texts) / (time.perf_counter() - start)
    first = histories[texts[0][0]]

    async def load_last_100() -> object:
        return first.messages[-100:]  # it has no limit: the whole session is read

    timings = await _time_loads(load_last_100, repeats)
    engine.dispose()
    return PeerFigures("LangChain SQLChatMessageHistory", rate, percentile(timings, 0.5),
                       percentile(timings, 0.99))


PEERS = (openai_sqlite_session, langchain_sql_history)


async def run_peers(
    folder: Path, texts: Sequence[tuple[str, str]], *, repeats: int
) -> list[PeerFigures]:
    """Every peer that is installed; a missing one is reported and skipped."""
    figures = []
    for peer in PEERS:
        try:
            figures.append(await peer(folder, texts, repeats=repeats))
        except ImportError as exc:
            print(f"  {peer.__name__}: not installed ({exc}); "
                  "install with .venv/bin/pip install -e '.[bench]'")
        await asyncio.sleep(0)
    return figures


async def agents_sdk_turns(folder: Path, conversations: int, turns: int, *,
                           session: Callable[[str], Any] | None = None) -> list[float]:
    """Whole turns, in ms, through the OpenAI Agents SDK's `Runner` with a `SQLiteSession` per
    conversation (or `session(conversation id)`) and a model that answers at once: the peer of
    our per-turn overhead (the session reads the history, the run appends the question and the
    answer)."""
    from agents import Agent, ModelSettings, Runner, SQLiteSession, Usage, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class InstantModel(Model):
        async def get_response(self, system_instructions: str | None, input: object,
                               model_settings: ModelSettings, tools: object,
                               output_schema: object, handoffs: object, tracing: object,
                               **_: object) -> ModelResponse:
            asked = input[-1]["content"] if isinstance(input, list) else str(input)
            text = ResponseOutputText(type="output_text", text=f"Noted: {str(asked)[-60:]}",
                                      annotations=[])
            return ModelResponse(output=[ResponseOutputMessage(
                id="msg", type="message", role="assistant", status="completed",
                content=[text])], usage=Usage(), response_id=None)

        def stream_response(self, *args: object, **kwargs: object) -> object:
            raise NotImplementedError("the benchmark does not stream")

    set_tracing_disabled(True)
    path = folder / "openai_agents_runner.db"
    remove_database(path)
    agent = Agent(name="support", instructions="You help customers.", model=InstantModel())
    sessions = [session(f"seq{c}") if session is not None else SQLiteSession(f"seq{c}", path)
                for c in range(conversations)]
    timings: list[float] = []
    for turn in range(turns):
        for session in sessions:
            question = (f"@support question {turn} about order {4400 + turn}: when will it "
                        "arrive?")
            started = time.perf_counter()
            await Runner.run(agent, question, session=session)
            timings.append((time.perf_counter() - started) * 1000)
    for opened in sessions:
        if isinstance(opened, SQLiteSession):
            opened.close()
    return timings[conversations * 2:]  # the first turns pay for imports and connections
