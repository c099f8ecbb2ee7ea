"""Person memory and erasure at scale: cross-conversation recall latency and `forget` time.

Recall: a store of N turns (default 1,000,000) in 1,000 channels of one Slack workspace, by 50
people; one of them, Ann, wrote every 50th turn, so she has turns in all 1,000 conversations.
Ann asks question-like queries in a new channel of that workspace (her `speaker_space` keys) and
in a DM (her `speaker_key`s): `PersonMemory.search` latency, p50 and p99, on SQLite and (with
THREADLINE_TEST_PG_URL) PostgreSQL, plus how many hits came back.

Forget: a separate store where Bob wrote 100,000 turns (in 100 conversations, each answered by
an agent, beside as many turns of others): the wall time of `forget_person`, which also deletes
the 100,000 replies, the summaries, inbox rows and records around them.

    .venv/bin/python bench/people.py --quick    # 50,000 rows, 10,000-turn forget: a minute
    .venv/bin/python bench/people.py            # 1,000,000 rows (first build: minutes)

Stores are kept in --folder (SQLite) or a schema (PostgreSQL) keyed by size and reused.
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import percentile  # noqa: E402
from store import build, ensure_pg_schema, question, sentence  # noqa: E402

from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history import Participant, StoredMessage  # noqa: E402
from threadline.history.model import MessageMetadata  # noqa: E402
from threadline.people import person_memory_for  # noqa: E402
from threadline.people.erase import forget_person  # noqa: E402

PEOPLE = [Participant(kind="user", id=f"U{n:02d}", display_name=f"P{n}") for n in range(50)]
ANN = PEOPLE[0]
SUPPORT = Participant(kind="agent", id="support", display_name="support")
T0 = datetime(2024, 1, 1, tzinfo=UTC)
POOL = 20_011


def workspace_turns(total: int, conversations: int) -> Iterator[StoredMessage]:
    """`total` turns round-robin over channels of workspace T1; every 50th is Ann's."""
    rng = random.Random(5)
    pool = [sentence(rng) for _ in range(POOL)]
    for n in range(total):
        yield StoredMessage(
            conversation_id=f"slack:T1:C{n % conversations}",
            participant=PEOPLE[(n // conversations) % len(PEOPLE)],
            content=f"{pool[n % POOL]} {pool[(n * 7919) % POOL]}",
            timestamp=T0 + timedelta(seconds=n),
            metadata=MessageMetadata(channel_type="slack", channel_name=f"c{n % conversations}"))


def forget_turns(person_turns: int, conversations: int) -> Iterator[StoredMessage]:
    """Bob's turns, each followed by an agent reply (`{id}>support`) and another person's."""
    rng = random.Random(9)
    pool = [sentence(rng) for _ in range(POOL)]
    bob, other = PEOPLE[1], PEOPLE[2]
    for n in range(person_turns):
        cid = f"slack:T2:C{n % conversations}"
        when = T0 + timedelta(seconds=3 * n)
        said = StoredMessage(conversation_id=cid, participant=bob, content=pool[n % POOL],
                             timestamp=when, id=f"bob-{n}")
        yield said
        yield StoredMessage(conversation_id=cid, participant=SUPPORT, id=f"bob-{n}>support",
                            content=pool[(n * 31) % POOL], timestamp=when + timedelta(seconds=1))
        yield StoredMessage(conversation_id=cid, participant=other,
                            content=pool[(n * 7) % POOL], timestamp=when + timedelta(seconds=2))


async def recall_figures(url: str, total: int, conversations: int, repeats: int) -> None:
    async with SqlConversationStore(url) as store:
        await build(store, total, conversations, workspace_turns(total, conversations))
        rng = random.Random(17)
        for place, cid, scope in (("a new channel", "slack:T1:CNEW", "channel"),
                                  ("a DM", "slack:T1:DANN", "dm")):
            latencies: list[float] = []
            hits = 0
            for _ in range(repeats):
                asking = StoredMessage(conversation_id=cid, participant=ANN,
                                       content=question(rng), scope=scope)  # type: ignore[arg-type]
                started = time.perf_counter()
                memory = await person_memory_for(store, asking)
                assert memory is not None
                found = await memory.search(asking.content)
                latencies.append((time.perf_counter() - started) * 1000)
                hits += len(found)
            print(f"  person memory from {place}: p50 {percentile(latencies, 0.5):.1f} ms, "
                  f"p99 {percentile(latencies, 0.99):.1f} ms over {repeats} questions "
                  f"({hits / repeats:.1f} hits each; Ann has {total // len(PEOPLE):,} turns in "
                  f"{min(conversations, total):,} conversations)")


async def forget_figures(url: str, person_turns: int, conversations: int) -> None:
    async with SqlConversationStore(url) as store:
        await build(store, person_turns * 3, conversations,
                    forget_turns(person_turns, conversations))
        started = time.perf_counter()
        counts = await forget_person(store, "slack:T2:U01")
        took = time.perf_counter() - started
        print(f"  forget {counts['turns']:,} turns and {counts['replies']:,} replies: "
              f"{took:.1f} s ({counts['turns'] / took:,.0f} turns/s)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--forget-turns", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--folder", type=Path,
                        default=Path(tempfile.gettempdir()) / "threadline-bench")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.forget_turns = 50_000, 10_000
    args.folder.mkdir(parents=True, exist_ok=True)
    pg = os.environ.get("THREADLINE_TEST_PG_URL")
    for dialect in ("sqlite", "postgresql"):
        if args.only not in (None, dialect):
            continue
        if dialect == "sqlite":
            recall_url = f"sqlite+aiosqlite:///{args.folder}/people-{args.messages}.db"
            # A fresh copy each run: forget empties it.
            forget_db = args.folder / f"people-forget-{args.forget_turns}.db"
            for leftover in forget_db.parent.glob(forget_db.name + "*"):
                leftover.unlink()
            forget_url = f"sqlite+aiosqlite:///{forget_db}"
        elif pg:
            recall_schema = f"bench_people_{args.messages}"
            forget_schema = f"bench_forget_{args.forget_turns}_{int(time.time())}"
            await ensure_pg_schema(pg, recall_schema)
            await ensure_pg_schema(pg, forget_schema)
            recall_url = f"{pg}?search_path={recall_schema}"
            forget_url = f"{pg}?search_path={forget_schema}"
        else:
            print("\nPostgreSQL: skipped (set THREADLINE_TEST_PG_URL)")
            continue
        print(f"\n{dialect}: {args.messages:,} turns in {args.conversations:,} conversations")
        await recall_figures(recall_url, args.messages, args.conversations, args.repeats)
        await forget_figures(forget_url, args.forget_turns, 100)


if __name__ == "__main__":
    asyncio.run(main())
