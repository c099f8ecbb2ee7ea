"""Two processes writing one conversation on one database at once, from a fresh database.

Both start on an empty database (so they also race the schema migration), then each appends
its own 300 turns interleaved with the same 40 platform events (a retry delivered to both
workers). No row may be lost, no sequence repeated, each writer's order kept, and each event
stored once.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from threadline.backends.sql import SqlConversationStore

TURNS = 300
SHARED_EVENTS = 40
FAST = 120  # seconds; far above the few seconds this takes, so only a hang trips it

# The worker: import everything, say "ready", wait for "go" on stdin so both processes
# start the race together, then append and print how many appends went in.
WORKER = """
import asyncio, sys
from datetime import UTC, datetime
from threadline.history import Participant, StoredMessage
from threadline.backends.sql import SqlConversationStore

url, name, turns, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
who = Participant(kind="user", id=name)
T0 = datetime(2024, 3, 1, tzinfo=UTC)

async def main() -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    stored = 0
    async with SqlConversationStore(url) as store:
        for i in range(turns):
            stored += await store.append(StoredMessage(
                conversation_id="c1", participant=who, content=f"{name} {i}", timestamp=T0))
            if i % (turns // shared) == 0 and i // (turns // shared) < shared:
                event = i // (turns // shared)
                stored += await store.append(StoredMessage(
                    conversation_id="c1", participant=who, content=f"event {event}",
                    timestamp=T0, metadata={"channel_type": "slack", "message_id": f"ev{event}"}))
    print(stored, flush=True)

asyncio.run(main())
"""


async def _race_two_writers(url: str) -> list[int]:
    """Run both workers against `url`; returns how many appends each reported as stored."""
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", WORKER, url, name, str(TURNS), str(SHARED_EVENTS),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=Path(__file__).parents[2],
        )
        for name in ("alpha", "beta")
    ]
    async with asyncio.timeout(FAST):
        for worker in workers:
            assert worker.stdout is not None
            assert (await worker.stdout.readline()).strip() == b"ready"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(b"go\n")
            await worker.stdin.drain()
        results = [await worker.communicate() for worker in workers]
    for worker, (_, stderr) in zip(workers, results, strict=True):
        assert worker.returncode == 0, stderr.decode()
    return [int(stdout.split()[-1]) for stdout, _ in results]


async def _assert_nothing_lost(url: str, stored: list[int]) -> None:
    async with SqlConversationStore(url) as store:
        got = await store.get("c1")
    assert len(got) == 2 * TURNS + SHARED_EVENTS == sum(stored)
    sequences = [m.sequence for m in got]
    assert len(set(sequences)) == len(sequences)
    assert sequences == sorted(sequences)
    for name in ("alpha", "beta"):
        mine = [int(m.content.split()[1]) for m in got if m.participant.id == name
                and not m.content.startswith("event")]
        assert mine == list(range(TURNS)), f"{name}'s turns are out of order or missing"
    events = sorted(m.metadata.message_id or "" for m in got if m.content.startswith("event"))
    assert events == sorted(f"ev{n}" for n in range(SHARED_EVENTS))


async def test_two_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    stored = await _race_two_writers(url)
    await _assert_nothing_lost(url, stored)


async def test_two_processes_on_one_postgres_database(pg_url: str) -> None:
    stored = await _race_two_writers(pg_url)
    await _assert_nothing_lost(pg_url, stored)
