"""Capture: a store outage mid-conversation loses no turn, reorders none, and costs no reply."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.interceptors.scripted import ANN, BOB, ScriptedModel, say
from threadline.agents.agent import Agent, Memory
from threadline.backends.sql import SqlConversationStore
from threadline.interceptors.outbox import Outbox


@contextmanager
def write_lock_held(database: Path) -> Iterator[None]:
    """Another connection holds the SQLite write lock (BEGIN EXCLUSIVE) until the block ends."""
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def user_turns(n: int, start: int = 0) -> list[str]:
    return [f"@support question {i}" for i in range(start, start + n)]


async def test_turns_during_a_locked_stretch_are_stored_in_order_once(tmp_path: Path) -> None:
    database = tmp_path / "threadline.db"
    store = SqlConversationStore(f"sqlite+aiosqlite:///{database}", busy_timeout=0.05)
    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel())
    outbox = Outbox(tmp_path / "threadline.db.outbox.jsonl")
    said: list[str] = []
    replies: list[str] = []

    async def turn(text: str) -> None:
        said.append(text)
        result = await agent.invoke(say(text, who=ANN if len(said) % 2 else BOB,
                                        conversation_id="c1"))
        replies.append(result.output)

    for text in user_turns(2):
        await turn(text)
    with write_lock_held(database):  # "the database fails for 30 s": N turns happen meanwhile
        for text in user_turns(4, start=2):
            await turn(text)
        assert outbox.has_pending()
        assert await store.count("c1") == 4  # nothing got through while the lock was held
    for text in user_turns(2, start=6):
        await turn(text)
    assert await agent.writer.replay()  # the background replay's work, awaited here

    stored = await store.get("c1")
    humans = [m.content for m in stored if m.participant.kind == "user"]
    assert humans == said  # every turn, in arrival order, exactly once
    assert [m.participant.kind for m in stored] == ["user", "agent"] * len(said)
    assert [m.content for m in stored if m.participant.kind == "agent"] == replies
    assert all(r.startswith("re: ") for r in replies)  # every turn was answered
    assert not outbox.has_pending()
    assert outbox.path.read_text() == ""
    await agent.close()
    await store.close()


async def test_a_leftover_outbox_is_replayed_after_a_restart(tmp_path: Path) -> None:
    database = tmp_path / "threadline.db"
    url = f"sqlite+aiosqlite:///{database}"
    store = SqlConversationStore(url, busy_timeout=0.05)
    agent = Agent(name="support", conversation_history=store, provider=ScriptedModel())
    await agent.invoke(say("@support before the outage", conversation_id="c1"))
    with write_lock_held(database):
        await agent.invoke(say("@support during the outage", conversation_id="c1"))
        await agent.close()  # the process stops while the database is still locked
        await store.close()
    outbox_file = tmp_path / "threadline.db.outbox.jsonl"
    left = [json.loads(line)["message"] for line in outbox_file.read_text().splitlines()]
    assert [m["content"] for m in left] == ["@support during the outage",
                                            "re: Ann: @support during the outage"]

    restarted = SqlConversationStore(url)  # a new process: new store, new agent, new capture
    agent = Agent(name="support", conversation_history=restarted, provider=ScriptedModel())
    await agent.invoke(say("@support after the restart", conversation_id="c1"))
    assert await agent.writer.replay()

    stored = [m.content for m in await restarted.get("c1")]
    assert stored == [
        "@support before the outage", "re: Ann: @support before the outage",
        "@support during the outage", "re: Ann: @support during the outage",
        "@support after the restart", "re: Ann: @support after the restart",
    ]
    assert outbox_file.read_text() == ""
    await agent.close()
    await restarted.close()


async def test_an_unreachable_postgres_answers_anyway_and_replays_into_the_real_one(
    pg_url: str, tmp_path: Path,
) -> None:
    outbox_path = tmp_path / "pg.outbox.jsonl"
    down = SqlConversationStore("postgresql+asyncpg://postgres@127.0.0.1:1/test",
                                busy_timeout=0.5)
    model = ScriptedModel()
    agent = Agent(name="support", conversation_history=down, provider=model,
                  memory=Memory(outbox_path=outbox_path))
    first = await agent.invoke(say("@support hello?", conversation_id="c1"))
    second = await agent.invoke(say("@support anyone?", conversation_id="c1"))
    # No history to read, but each turn was still answered, seeing at least itself.
    assert [first.output, second.output] == ["re: Ann: @support hello?",
                                            "re: Ann: @support anyone?"]
    assert first.prompt is not None and "history unavailable" in first.prompt.notes[0]
    await agent.close()
    await down.close()

    async with SqlConversationStore(pg_url) as real:
        agent = Agent(name="support", conversation_history=real, provider=model,
                      memory=Memory(outbox_path=outbox_path))
        assert await agent.writer.replay()
        stored = [m.content for m in await real.get("c1")]
        assert stored == ["@support hello?", "re: Ann: @support hello?",
                          "@support anyone?", "re: Ann: @support anyone?"]
        await agent.close()
    assert outbox_path.read_text() == ""


@pytest.mark.parametrize("torn", ['{"v": 1, "message": {"id": "half', "not json at all"])
async def test_an_unreadable_outbox_line_is_set_aside_not_dropped(
    tmp_path: Path, torn: str,
) -> None:
    outbox = Outbox(tmp_path / "outbox.jsonl")
    good = say("kept", conversation_id="c1")
    await outbox.add([good])
    with outbox.path.open("a") as file:
        file.write(torn + "\n")
    assert [m.id for m in await outbox.pending()] == [good.id]
    assert outbox.rejected_path.read_text() == torn + "\n"
    assert await outbox.remove([good.id]) == 0
