"""How fast the conversation stores are, against the plain sqlite3 floor and the peers.

Builds a store of N messages (default 1,000,000 in 1,000 conversations; the SQLite and
PostgreSQL builds are reused between runs, keyed by size) and prints for the in-memory, SQLite
and PostgreSQL stores: appends/s with one writer and with 50 concurrent writers, `get` of the
last 100 turns of a 1,000-turn conversation (p50, p99) and `search` inside one conversation with
question-like queries (p50, p99). The same work done with the plain `sqlite3` module (same
schema, FTS5 trigger included, one transaction per append) is the floor each SQLite figure is
divided by. LangChain's SQLChatMessageHistory and the OpenAI Agents SDK's SQLiteSession run the
same appends and loads on 10,000 messages. Figures only, no assertions.

    .venv/bin/python bench/store.py --quick     # ~20,000 messages, a minute or so
    .venv/bin/python bench/store.py             # 1,000,000 messages (first build: minutes)
    THREADLINE_TEST_PG_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/test ...  # adds PG
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import percentile  # noqa: E402
from peers import PeerFigures, remove_database, run_peers  # noqa: E402

from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.schema import SELECT_LIST, SELECT_LIST_M  # noqa: E402
from threadline.backends.sql.sqlite import fts5_word_match  # noqa: E402
from threadline.history import (  # noqa: E402
    InMemoryConversationStore,
    Participant,
    StoredMessage,
)
from threadline.history.search import SearchQuery, conversation_key  # noqa: E402
from threadline.history.store import ConversationStore  # noqa: E402

BUILD_BATCH = 5000
PEOPLE = [Participant(kind="user", id=f"U{n}", display_name=name)
          for n, name in enumerate(["Ann", "Bob", "Carol", "Dmitri", "Esther", "Farid"])]
T0 = datetime(2024, 1, 1, tzinfo=UTC)
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "ge", "fa", "ti", "bu"]
FILLER = ["the", "we", "it", "and", "to", "for", "about", "with", "on", "is", "was", "that"]


def vocabulary(size: int = 6000) -> list[str]:
    """Deterministic made-up words; drawn with a Zipf-like skew so some are common."""
    rng = random.Random(3)
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


WORDS = vocabulary()
CUMULATIVE = list(accumulate(1 / (rank + 10) for rank in range(len(WORDS))))


def sentence(rng: random.Random) -> str:
    picked = rng.choices(WORDS, cum_weights=CUMULATIVE, k=rng.randint(4, 10))
    for _ in range(len(picked) // 3):
        picked.insert(rng.randrange(len(picked)), rng.choice(FILLER))
    return " ".join(picked).capitalize() + "."


def question(rng: random.Random) -> str:
    a, b = rng.choices(WORDS[50:2000], k=2)
    return rng.choice([f"What did we decide about the {a} for {b}?",
                       f"Who said something about {a} and {b}?",
                       f"When was the {a} mentioned?"])


SENTENCE_POOL = 20_011  # prime, so (a, b) pairs below repeat only after pool**2 turns


def turns(total: int, conversations: int, *, prefix: str = "c", seed: int = 1
          ) -> Iterator[StoredMessage]:
    """`total` turns spread round-robin over `conversations` conversations.

    Each turn joins two sentences from a fixed pool (generating 1,000,000 fresh sentences
    would take longer than storing them).
    """
    rng = random.Random(seed)
    pool = [sentence(rng) for _ in range(SENTENCE_POOL)]
    for n in range(total):
        content = f"{pool[n % SENTENCE_POOL]} {pool[(n * 7919 + seed) % SENTENCE_POOL]}"
        yield StoredMessage(
            conversation_id=f"{prefix}{n % conversations}", participant=PEOPLE[n % len(PEOPLE)],
            content=content, timestamp=T0 + timedelta(seconds=n),
        )


@dataclass(frozen=True)
class Figures:
    """One store's figures (rates in appends/s, latencies in ms)."""

    one_writer: float
    fifty_writers: float
    get_p50: float
    get_p99: float
    search_p50: float
    search_p99: float


async def timings(call: Callable[[int], Awaitable[object]], repeats: int) -> list[float]:
    out = []
    for n in range(repeats):
        start = time.perf_counter()
        await call(n)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def measure(store: ConversationStore, *, appends: int, conversations: int,
                  repeats: int, tag: str, search_repeats: int | None = None) -> Figures:
    """Append rates on fresh conversations, then reads of the built ones."""
    fresh = list(turns(appends, 1, prefix=f"one-{tag}-", seed=7))
    start = time.perf_counter()
    for message in fresh:
        await store.append(message)
    one = appends / (time.perf_counter() - start)

    crowd = list(turns(appends, 1, prefix=f"fifty-{tag}-", seed=8))

    async def writer(k: int) -> None:
        for message in crowd[k::50]:
            await store.append(message)

    start = time.perf_counter()
    await asyncio.gather(*(writer(k) for k in range(50)))
    fifty = appends / (time.perf_counter() - start)

    gets = await timings(lambda n: store.get(f"c{n % conversations}", limit=100), repeats)
    rng = random.Random(5)
    questions = [(f"c{rng.randrange(conversations)}", question(rng)) for _ in range(repeats)]
    searches = await timings(lambda n: store.search(*questions[n], limit=10),
                             search_repeats or repeats)
    return Figures(one, fifty, percentile(gets, 0.5), percentile(gets, 0.99),
                   percentile(searches, 0.5), percentile(searches, 0.99))


async def build(store: ConversationStore, total: int, conversations: int,
                source: Iterator[StoredMessage] | None = None) -> None:
    """Fill the store to `total` turns with big append_many batches (resumes a partial build).

    `source` gives the turns (default: `turns(total, conversations)`).
    """
    done = await store.count()
    if done >= total:
        print(f"  reusing {done:,} stored turns")
        return
    started = time.perf_counter()
    source = source if source is not None else turns(total, conversations)
    for _ in range(done):
        next(source)
    batch: list[StoredMessage] = []
    for message in source:
        batch.append(message)
        if len(batch) == BUILD_BATCH:
            await store.append_many(batch)
            done += len(batch)
            batch = []
            if done % 100_000 == 0:
                print(f"  built {done:,} ({done / (time.perf_counter() - started):,.0f}/s)")
    if batch:
        await store.append_many(batch)
    print(f"  built {total:,} turns in {time.perf_counter() - started:,.0f} s")


# -- the floor: plain sqlite3, no ORM, same schema ------------------------------------------

_INSERT = (
    "INSERT INTO threadline_messages (id, conversation_id, conv_key, sequence, participant_kind, "
    "participant_id, participant_name, content, ts_us, scope, channel_type, mentions, "
    "is_summary, has_cjk, token_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'channel', 'local', "
    "'', 0, 0, ?) ON CONFLICT DO NOTHING"
)


def floor_append(connection: sqlite3.Connection, message: StoredMessage) -> None:
    """One append as a hand-written store would do it: one transaction, sequence inside."""
    connection.execute("BEGIN IMMEDIATE")
    (last,) = connection.execute(
        "INSERT INTO threadline_conversations VALUES (?, 0, 0, 0) ON CONFLICT (conversation_id) "
        "DO UPDATE SET last_sequence = last_sequence RETURNING last_sequence",
        (message.conversation_id,)).fetchone()
    ts = int(message.timestamp.timestamp() * 1_000_000)
    connection.execute(_INSERT, (
        message.id, message.conversation_id, conversation_key(message.conversation_id), last + 1,
        message.participant.kind, message.participant.id, message.participant.display_name,
        message.content, ts, 10))
    connection.execute(
        "UPDATE threadline_conversations SET last_sequence = ?, message_count = message_count + 1,"
        " last_activity_us = ? WHERE conversation_id = ?", (last + 1, ts, message.conversation_id))
    connection.execute("COMMIT")


def floor_figures(db: Path, *, appends: int, conversations: int, repeats: int) -> Figures:
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("PRAGMA synchronous = NORMAL")
    fresh = list(turns(appends, 1, prefix="floor-one-", seed=7))
    start = time.perf_counter()
    for message in fresh:
        floor_append(connection, message)
    one = appends / (time.perf_counter() - start)

    def get(n: int) -> None:
        connection.execute(
            f"SELECT {SELECT_LIST} FROM threadline_messages WHERE conversation_id = ? AND "
            "is_summary = 0 ORDER BY sequence DESC LIMIT 100", (f"c{n % conversations}",),
        ).fetchall()

    rng = random.Random(5)
    questions = [(f"c{rng.randrange(conversations)}", question(rng)) for _ in range(repeats)]

    def search(n: int) -> None:
        cid, text = questions[n]
        match = fts5_word_match(SearchQuery.parse(text), conversation_key(cid))
        connection.execute(
            f"SELECT bm25(threadline_messages_fts, 0.0, 1.0, 0.5) AS rank, {SELECT_LIST_M} "
            "FROM threadline_messages_fts JOIN threadline_messages m "
            "ON m.row_id = threadline_messages_fts.rowid WHERE threadline_messages_fts MATCH ? "
            "AND m.conversation_id = ? ORDER BY rank LIMIT 10", (match, cid)).fetchall()

    gets = sync_timings(get, repeats)
    searches = sync_timings(search, repeats)
    connection.close()
    # No group commit by hand: 50 writers on the floor serialize into the single-writer rate.
    return Figures(one, one, percentile(gets, 0.5), percentile(gets, 0.99),
                   percentile(searches, 0.5), percentile(searches, 0.99))


def sync_timings(call: Callable[[int], None], repeats: int) -> list[float]:
    out = []
    for n in range(repeats):
        start = time.perf_counter()
        call(n)
        out.append((time.perf_counter() - start) * 1000)
    return out


# -- printing -------------------------------------------------------------------------------


def row(name: str, figures: Figures, floor: Figures | None) -> None:
    """One store's figures; each with its ratio to the floor (rates: >1 is faster than it,
    latencies: >1 is slower than it)."""

    def ratio(ours: float, base: float) -> str:
        return f"  ({ours / base:.2f}x the floor)" if floor is not None else ""

    base = floor or figures
    print(name)
    print(f"  append, 1 writer   {figures.one_writer:>10,.0f}/s"
          f"{ratio(figures.one_writer, base.one_writer)}")
    print(f"  append, 50 writers {figures.fifty_writers:>10,.0f}/s"
          f"{ratio(figures.fifty_writers, base.fifty_writers)}")
    print(f"  get last 100  p50 {figures.get_p50:8.3f} ms  p99 {figures.get_p99:8.3f} ms"
          f"{ratio(figures.get_p50, base.get_p50)}")
    print(f"  search        p50 {figures.search_p50:8.3f} ms  p99 {figures.search_p99:8.3f} ms"
          f"{ratio(figures.search_p50, base.search_p50)}")


async def peers_and_ours(folder: Path, messages: int, repeats: int) -> None:
    """Peers and our SQLite store on the same `messages` turns in 1,000-turn conversations."""
    conversations = max(messages // 1000, 1)
    texts = [(m.conversation_id, m.content) for m in turns(messages, conversations, seed=9)]
    print(f"\nPeers: {messages:,} appends, one writer, {conversations} conversations; "
          "load = last 100 turns of one")
    figures = await run_peers(folder, texts, repeats=repeats)
    path = folder / "ours-peer-size.db"
    remove_database(path)
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        start = time.perf_counter()
        for message in turns(messages, conversations, seed=9):
            await store.append(message)
        ours_rate = messages / (time.perf_counter() - start)
        loads = await timings(lambda n: store.get(texts[0][0], limit=100), repeats)
    ours = PeerFigures("Threadline SqlConversationStore (SQLite)", ours_rate,
                       percentile(loads, 0.5), percentile(loads, 0.99))
    for peer in [*figures, ours]:
        print(f"  {peer.name:42} {peer.appends_per_second:>8,.0f} appends/s   load p50 "
              f"{peer.load_p50_ms:7.3f} ms  p99 {peer.load_p99_ms:7.3f} ms")
    for peer in figures:
        appends = ours.appends_per_second / peer.appends_per_second
        loads = peer.load_p50_ms / ours.load_p50_ms
        print(f"  ours vs {peer.name}: appends {appends:.1f}x, load {loads:.1f}x as fast")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="20,000 messages, 20 conversations")
    parser.add_argument("--appends", type=int, default=3_000, help="appends per rate figure")
    parser.add_argument("--repeats", type=int, default=300, help="samples per latency figure")
    parser.add_argument("--peer-messages", type=int, default=10_000)
    parser.add_argument("--folder", type=Path,
                        default=Path(tempfile.gettempdir()) / "threadline-bench")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.conversations, args.appends = 20_000, 20, 2_000
    args.folder.mkdir(parents=True, exist_ok=True)
    total, conversations = args.messages, args.conversations
    print(f"{total:,} messages in {conversations:,} conversations "
          f"({total // conversations:,} each); rates from {args.appends:,} appends")

    db = args.folder / f"store-{total}-{conversations}.db"
    print(f"\nSQLite {db}")
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as sqlite_store:
        await build(sqlite_store, total, conversations)
        sqlite_figures = await measure(sqlite_store, appends=args.appends, tag=str(time.time()),
                                       conversations=conversations, repeats=args.repeats)
    floor = floor_figures(db, appends=args.appends, conversations=conversations,
                          repeats=args.repeats)

    print("\nIn-memory")
    memory = InMemoryConversationStore(max_conversations=conversations + 10,
                                       max_messages_per_conversation=total)
    await build(memory, total, conversations)
    # Its search stems every turn of the conversation per query: tens of ms, so fewer samples.
    memory_figures = await measure(memory, appends=args.appends, conversations=conversations,
                                   repeats=args.repeats, tag="m", search_repeats=20)
    pg_figures: Figures | None = None
    pg_url = os.environ.get("THREADLINE_TEST_PG_URL")
    if pg_url:
        schema = f"bench_{total}_{conversations}"
        await ensure_pg_schema(pg_url, schema)
        print(f"\nPostgreSQL schema {schema}")
        async with SqlConversationStore(f"{pg_url}?search_path={schema}") as pg_store:
            await build(pg_store, total, conversations)
            pg_figures = await measure(pg_store, appends=args.appends, tag=str(time.time()),
                                       conversations=conversations, repeats=args.repeats)

    print("\n== Figures ==")
    row("raw sqlite3 floor (one transaction per append, same schema and FTS5 trigger)", floor,
        None)
    row("SqlConversationStore on SQLite", sqlite_figures, floor)
    if pg_figures is not None:
        row("SqlConversationStore on PostgreSQL", pg_figures, floor)
    else:
        print("SqlConversationStore on PostgreSQL: skipped (set THREADLINE_TEST_PG_URL, e.g. "
              "postgresql+asyncpg://postgres@127.0.0.1:5432/test)")
    row("InMemoryConversationStore", memory_figures, floor)
    await peers_and_ours(args.folder, args.peer_messages, min(args.repeats, 100))


async def ensure_pg_schema(url: str, schema: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    finally:
        await connection.close()


if __name__ == "__main__":
    asyncio.run(main())
