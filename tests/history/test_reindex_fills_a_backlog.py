"""A database filled before the embeddings extra was installed gets its vectors, with progress,
and recall works all along.

Turns are stored with no indexer running (as a bot without the extra stores them), on a
SQLite file and on PostgreSQL. One background batch embeds the oldest turns: a newer turn is
still recalled by its words, an embedded one is found by meaning. `threadline history reindex`
then fills the rest and says how far it is; a second run finds nothing left to do, and
vectors made by another model are replaced, not kept beside.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.history.embedding import embedded, real_embedder, vectors_of
from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore
from threadline.history.indexer import BATCH, VectorIndexer
from threadline.history.recall import find_recall

COACHING = "I train the under-12 football team on Saturdays"
TOPICS = ["the invoice for order {n} is overdue", "the printer on floor {n} is jammed",
          "lunch on day {n} was pasta", "ticket {n} was closed by the night shift"]
TURNS = 3 * BATCH


@pytest.fixture(params=["sqlite", "postgresql"])
async def url(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'backlog.db'}"
        return
    schema_url = await fresh_pg_schema(pg_url_or_skip())
    yield schema_url
    await drop_pg_schema(schema_url)


async def _filled(url: str) -> None:
    async with SqlConversationStore(url) as store:
        await store.append(turn(COACHING, conversation_id="c0"))
        await store.append_many([
            turn(TOPICS[n % 4].format(n=n), conversation_id=f"c{n % 3}", minute=n)
            for n in range(1, TURNS - 1)])
        await store.append(turn("the alarm code for the warehouse changed to 4471",
                                conversation_id="c0", minute=TURNS))


async def test_recall_works_during_the_backlog_and_reindex_fills_it(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    await _filled(url)
    model = real_embedder().name
    async with SqlConversationStore(url) as store:
        vectors = vectors_of(store)
        assert await vectors.progress(model) == (0, TURNS)
        stale = await store.get("c1", limit=5)
        assert await vectors.put_many("old-model@0", [(t.id, embedded(t.content))
                                                      for t in stale]) == 5
        indexer = VectorIndexer(store, vectors, real_embedder())
        assert await indexer.embed_batch() == BATCH
        assert await vectors.progress(model) == (BATCH, TURNS)

        # The newest turn has no vector yet and is recalled by its words.
        windows = await find_recall(store, "c0", "what is the warehouse alarm code now?",
                                    room=2000, min_hits=3, exclude_ids=(), through_sequence=None)
        assert any("4471" in m.content for w in windows for m in w.messages)
        # The oldest is embedded: found by meaning, without one shared word.
        hits = await vectors.nearest("c0", embedded("Which sport does she coach?"), model,
                                     limit=3)
        assert [m.content for m in await store.get_by_ids("c0", [hits[0].message_id])] == [
            COACHING]

    where = ["--db", url.removeprefix("sqlite:///")] if url.startswith("sqlite") else [
        "--url", url]
    outcome = await asyncio.to_thread(run_cli, capsys, "history", "reindex", *where)
    assert outcome.code == 0, outcome.err
    progress = [(int(a.replace(",", "")), int(b.replace(",", "")))
                for a, b in re.findall(r"reindexed ([\d,]+)/([\d,]+) turns", outcome.err)]
    assert progress[0] == (BATCH, TURNS) and progress[-1] == (TURNS, TURNS)
    assert f"{TURNS - BATCH:,} turns embedded by {model}" in outcome.err
    assert "turns/s" in outcome.err

    again = await asyncio.to_thread(run_cli, capsys, "history", "reindex", *where)
    assert f"0 turns embedded by {model}" in again.err
    async with SqlConversationStore(url) as store:
        vectors = vectors_of(store)
        assert await vectors.progress(model) == (TURNS, TURNS)
        assert await vectors.progress("old-model@0") == (0, TURNS)

