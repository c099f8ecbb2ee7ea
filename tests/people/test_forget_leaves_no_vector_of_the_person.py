"""After `threadline people forget`, no stored vector is the embedding of anything Ann said.

The conversations of `test_forget_leaves_no_trace_of_the_person` (real agents answering Ann
and Bob in a shared room and Ann in a DM, on a SQLite file and on PostgreSQL) are embedded by
the real model, as `threadline history reindex` does. The vectors table is then read straight
from the database: before, Ann's turns' embeddings are there; after the command, none is, no
vector is left without its turn, and Bob's turns keep theirs. The memory backend is checked
the same way through `forget_person`.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.history.embedding import index_everything, real_embedder
from tests.people.test_forget_leaves_no_trace_of_the_person import (
    ANN,
    BOB_WORD,
    SECRET,
    _conversations,
    _raw,
)
from threadline.backends.memory_vectors import MemoryVectorIndex
from threadline.backends.parts import parts_of, people_for
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.conversation_vectors import stored_form
from threadline.cli import main as threadline
from threadline.history.memory import InMemoryConversationStore
from threadline.history.model import Participant, StoredMessage
from threadline.history.store import ConversationStore
from threadline.people.erase import forget_person


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("pg_url"))


async def _turns_by_speaker(store: ConversationStore) -> dict[str, list[StoredMessage]]:
    by_speaker: dict[str, list[StoredMessage]] = {}
    for info in await store.list_conversations():
        for message in await store.get(info.conversation_id):
            by_speaker.setdefault(message.participant.id, []).append(message)
    return by_speaker


def _embeddings(turns: list[StoredMessage]) -> set[bytes]:
    """The turns' vectors in the form the SQL backends keep them."""
    return {stored_form(v) for v in real_embedder().embed([t.content for t in turns])}


async def _stored_vectors(url: str) -> set[bytes]:
    rows = await _raw(url, "SELECT vector FROM threadline_vectors")
    return {row[0] for row in rows if isinstance(row[0], bytes)}


async def test_forget_deletes_the_vectors_of_the_persons_turns(
        db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    await _conversations(db_url)
    async with SqlConversationStore(db_url) as store:
        progress = await index_everything(store)
        by_speaker = await _turns_by_speaker(store)
    assert progress.done == progress.total > 0
    ann, bob = _embeddings(by_speaker["ann"]), _embeddings(by_speaker["bob"])
    assert len(ann) == 5 and len(bob) == 4
    assert ann <= await _stored_vectors(db_url)

    assert await asyncio.to_thread(threadline, ["people", "forget", "local:ann", "--url", db_url,
                                                "--yes"]) == 0
    assert "5 turns" in capsys.readouterr().err

    left = await _stored_vectors(db_url)
    assert not ann & left
    assert bob <= left
    orphans = await _raw(db_url, "SELECT count(*) FROM threadline_vectors v WHERE NOT EXISTS "
                                 "(SELECT 1 FROM threadline_messages m WHERE m.conversation_id "
                                 "= v.conversation_id AND m.sequence = v.sequence)")
    assert orphans == [(0,)]
    async with SqlConversationStore(db_url) as store:
        assert not any(SECRET in turn.content for turns in (await _turns_by_speaker(store)
                                                             ).values() for turn in turns)
        vectors = parts_of(store).vectors
        assert vectors is not None
        done, total = await vectors.progress(real_embedder().name)
        assert done == total  # every turn left still has its vector


async def test_forget_deletes_the_vectors_kept_in_memory() -> None:
    store = InMemoryConversationStore()
    ann_words = [f"my gate code word is {SECRET} number {n}" for n in range(3)]
    await store.append_many(
        [StoredMessage(conversation_id="local:shop", participant=ANN, content=text)
         for text in ann_words]
        + [StoredMessage(conversation_id="local:shop",
                         participant=Participant(kind="user", id="bob", display_name="bob"),
                         content=f"I keep a pet {BOB_WORD}")])
    await index_everything(store)
    index = parts_of(store).vectors
    assert isinstance(index, MemoryVectorIndex)
    ann = set(real_embedder().embed(ann_words))
    assert ann <= {vector for _, vector in index._vectors.values()}
    await people_for(store).link(["local:ann"], linked_by="operator")
    await forget_person(store, "local:ann")
    kept = {vector for _, vector in index._vectors.values()}
    assert not ann & kept and len(kept) == 1
