"""The running app gives its turns vectors in the background, and answering never waits for it.

`Threadline` (the app `threadline run` builds) with the offline model on a SQLite file, the
real embedding model installed: the turns it answers get their vectors after the replies went
out. Turns stored while no indexer ran (a process that died first) are picked up at the next
start. A model that fails leaves every turn answered, is logged and retried, and the turns get
their vectors once it works. Two indexers on one database (SQLite, PostgreSQL) store each
vector once and both finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from structlog.testing import capture_logs

from tests.history.embedding import real_embedder, vectors_of
from tests.history.helpers import turn
from threadline import Threadline
from threadline.backends.sql import SqlConversationStore
from threadline.history.indexer import VectorIndexer
from threadline.history.store import ConversationStore


class FailsAtFirst:
    """The real model behind a fault: its first `failures` calls raise, as a crashed one."""

    def __init__(self, failures: int) -> None:
        self.model = real_embedder()
        self.failures = failures

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dimensions(self) -> int:
        return self.model.dimensions

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("the model process died")
        return self.model.embed(texts)


def _app(db: Path) -> Threadline:
    return Threadline(agents={"ada": "You are Ada."}, store=f"sqlite:///{db}", model="offline")


async def _all_embedded(store: ConversationStore) -> tuple[int, int]:
    vectors = vectors_of(store)
    async with asyncio.timeout(30):
        while (progress := await vectors.progress(real_embedder().name))[0] < progress[1]:  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # the database says when it is done; no event does
    return progress


async def test_answered_turns_get_vectors_in_the_background(tmp_path: Path) -> None:
    async with _app(tmp_path / "bot.db") as app:
        indexer = app.runtime.indexer
        assert indexer is not None and indexer.embedder.name == real_embedder().name
        for n in range(3):
            assert len(await app.say("room", f"@ada note number {n}: the van is blue")) == 1
        store = app.runtime.store
        assert await _all_embedded(store) == (6, 6)  # three questions, three replies
        assert indexer.embedded == 6


async def test_turns_stored_while_no_indexer_ran_are_picked_up_at_start(
        tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    async with SqlConversationStore(f"sqlite:///{db}") as store:
        await store.append_many([turn(f"old note {n}", conversation_id="local:room")
                                 for n in range(40)])
    async with _app(db) as app:
        assert await _all_embedded(app.runtime.store) == (40, 40)


async def test_a_failing_model_never_stops_answering(tmp_path: Path) -> None:
    app = _app(tmp_path / "bot.db")
    runtime = app.runtime
    assert runtime.indexer is None and runtime.backend.vectors is not None  # made at start
    runtime.indexer = VectorIndexer(runtime.store, runtime.backend.vectors, FailsAtFirst(2))
    with capture_logs() as logs:
        async with app:
            for n in range(3):
                replies = await app.say("room", f"@ada question {n}")
                assert len(replies) == 1 and "question" in replies[0].text
            assert await _all_embedded(runtime.store) == (6, 6)
    failures = [e for e in logs if e["event"] == "vectors.indexing_failed"]
    assert len(failures) == 2 and "the model process died" in failures[0]["error"]


async def _two_indexers(url: str) -> None:
    async with SqlConversationStore(url) as writer:
        await writer.append_many([turn(f"note {n} about the blue van", conversation_id=f"c{n % 4}")
                                  for n in range(1_000)])
    async with SqlConversationStore(url) as one, SqlConversationStore(url) as two:
        first = VectorIndexer(one, vectors_of(one), real_embedder(), batch=100)
        second = VectorIndexer(two, vectors_of(two), real_embedder(), batch=100)
        await asyncio.gather(first.fill(), second.fill())
        assert first.embedded + second.embedded == 1_000  # each vector stored once
        assert await vectors_of(one).progress(real_embedder().name) == (1_000, 1_000)


async def test_two_indexers_on_one_sqlite_file_store_each_vector_once(tmp_path: Path) -> None:
    await _two_indexers(f"sqlite:///{tmp_path / 'shared.db'}")


async def test_two_indexers_on_one_postgresql_store_each_vector_once(pg_url: str) -> None:
    await _two_indexers(pg_url)
