"""On SQLite a few rows are read and written on the event loop (`SqliteBackend.read_few`,
`write_few`); the loop must never wait there on another connection's lock.

Another connection (the other worker on the file) holds the write lock for half a second while
turns are appended and read: the loop keeps ticking, the reads answer at once, the appends land
once the lock is let go, in the order they were asked for, and none fails as "database is
locked". Writes asked for while the writer thread still has work wait behind it, in order.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.operations import SqlRunner
from threadline.history.model import Participant, StoredMessage

ANN = Participant(kind="user", id="ann", display_name="Ann")
HELD = 0.5  # seconds the other connection holds the write lock
LONGEST_TICK = 0.15  # the loop's longest pause allowed meanwhile (a tick is 10 ms)


def turn(conversation_id: str, text: str) -> StoredMessage:
    return StoredMessage(conversation_id=conversation_id, participant=ANN, content=text)


async def longest_pause(done: asyncio.Event) -> float:
    """The longest the loop went without running this ticker, until `done`."""
    longest, last = 0.0, time.perf_counter()
    while not done.is_set():
        await asyncio.sleep(0.01)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    return longest


async def test_a_held_write_lock_never_stalls_the_loop(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    async with SqlConversationStore(f"sqlite:///{database}") as store:
        await store.append(turn("c1", "first, before the lock"))
        other = sqlite3.connect(database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the other worker is writing
        done = asyncio.Event()
        ticker = asyncio.ensure_future(longest_pause(done))
        started = time.perf_counter()
        appends = [asyncio.ensure_future(store.append(turn("c1", f"while locked {n}")))
                   for n in range(3)]
        read = await store.get("c1", limit=50)
        read_took = time.perf_counter() - started
        await asyncio.sleep(HELD)
        other.execute("COMMIT")
        other.close()
        assert all(await asyncio.gather(*appends))
        done.set()
        assert await ticker < LONGEST_TICK
        assert read_took < LONGEST_TICK
        assert [m.content for m in read] == ["first, before the lock"]
        assert [m.content for m in await store.get("c1", limit=50)] == [
            "first, before the lock", "while locked 0", "while locked 1", "while locked 2"]
        assert [m.sequence for m in await store.get("c1", limit=50)] == [1, 2, 3, 4]


def _note(runner: SqlRunner, label: str) -> None:
    runner.rowcount("CREATE TABLE IF NOT EXISTS notes (n INTEGER PRIMARY KEY, label TEXT)", {})
    runner.rowcount("INSERT INTO notes (label) VALUES (:label)", {"label": label})


def _notes(runner: SqlRunner) -> list[str]:
    return [str(row[0]) for row in runner.rows("SELECT label FROM notes ORDER BY n", {})]


async def test_a_few_rows_wait_behind_the_writer_threads_work(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    async with SqlConversationStore(f"sqlite:///{database}") as store:
        await store.run("note", _note, "before", write=True, few=True)
        other = sqlite3.connect(database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        waiting = asyncio.ensure_future(store.run("note", _note, "waiting", write=True))
        await asyncio.sleep(0.3)  # the writer thread sleeps in its busy handler
        other.execute("COMMIT")
        other.close()
        # The lock is free now, but the writer thread has work: this goes behind it.
        await store.run("note", _note, "few", write=True, few=True)
        await waiting
        await store.run("note", _note, "few, the thread idle", write=True, few=True)
        assert await store.run("read notes", _notes) == [
            "before", "waiting", "few", "few, the thread idle"]
