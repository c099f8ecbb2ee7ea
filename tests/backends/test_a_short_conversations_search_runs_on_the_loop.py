"""On SQLite a search of a short conversation whose words are counted runs on the event loop,
as a read of a few rows does (`sqlite.searches_few`, `SqliteBackend.read_few`): no hop to a
reader thread, the same windows as there.

A search of words never counted goes to a reader thread, which counts them; so do a
conversation longer than FEW_ROWS_READ turns (its size read at each search: another process
may have grown it since the last) and text searched through the trigram index. A search run on
the loop while another connection holds the write lock still answers at once, from what was
committed (in WAL mode a reader waits on no writer).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import SqliteBackend
from threadline.backends.sql.operations import FEW_ROWS_READ
from threadline.errors import StoreError
from threadline.history.model import Participant, StoredMessage
from threadline.history.store import SearchWindow

ANN = Participant(kind="user", id="ann", display_name="Ann")


def turns(conversation_id: str, count: int) -> list[StoredMessage]:
    return [StoredMessage(conversation_id=conversation_id, participant=ANN,
                          content=f"turn {n}: where is parcel {4400 + n % 7}? 東京の天気")
            for n in range(count)]


@contextmanager
def hops_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The reads sent to the store's reader threads while counting."""
    hops: list[str] = []
    read = SqliteBackend.read

    async def counted(backend: SqliteBackend, fn: Any, *args: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await read(backend, fn, *args)

    monkeypatch.setattr(SqliteBackend, "read", counted)
    yield hops


def shown(windows: list[SearchWindow]) -> list[tuple[list[str], list[str]]]:
    return [(list(w.hit_ids), [m.id for m in w.messages]) for w in windows]


async def search(store: SqlConversationStore, query: str) -> list[SearchWindow]:
    return await store.search_context("c1", query, limit=3, context=1, token_cap=2000)


async def test_a_known_search_of_a_short_conversation_takes_no_hop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        await store.append_many(turns("c1", 40))
        with hops_counted(monkeypatch) as hops:
            first = await search(store, "where is parcel 4403?")
            assert len(hops) == 1  # its words' counts, learned there
            again = await search(store, "parcel 4403, where is it?")
            assert len(hops) == 1
            assert shown(again) == shown(first) and first
            await search(store, "parcel 4404")  # a word not counted yet
            assert len(hops) == 2
            await search(store, "東京の天気")  # the trigram index: its postings are not counted
            assert len(hops) == 3


async def test_a_long_conversation_is_searched_in_a_reader_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        await store.append_many(turns("c1", FEW_ROWS_READ + 1))
        with hops_counted(monkeypatch) as hops:
            first = await search(store, "where is parcel 4403?")
            again = await search(store, "parcel 4403, where is it?")
            assert len(hops) == 2
            assert shown(again) == shown(first) and first


async def test_a_conversation_another_process_grew_is_searched_in_a_reader_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    async with SqlConversationStore(url) as store, SqlConversationStore(url) as other:
        await store.append_many(turns("c1", 40))
        await search(store, "where is parcel 4403?")
        await other.append_many(turns("c1", FEW_ROWS_READ))  # the other worker on the file
        with hops_counted(monkeypatch) as hops:
            again = await search(store, "parcel 4403, where is it?")
        assert len(hops) == 1
        assert len({m.id for w in again for m in w.messages}) > 0


async def test_a_search_on_the_loop_answers_beside_a_held_write_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "t.db"
    async with SqlConversationStore(f"sqlite:///{database}") as store:
        await store.append_many(turns("c1", 40))
        first = await search(store, "where is parcel 4403?")
        other = sqlite3.connect(database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the other worker is writing
        other.execute("DELETE FROM threadline_messages WHERE conversation_id = 'c1'")
        try:
            with hops_counted(monkeypatch) as hops:
                again = await search(store, "parcel 4403, where is it?")
            assert hops == []
            assert shown(again) == shown(first)  # what was committed, not what is being written
        finally:
            other.execute("ROLLBACK")
            other.close()


async def test_a_database_that_refuses_the_look_at_a_search_fails_in_the_stores_terms(
        tmp_path: Path) -> None:
    """Whether a search runs on the loop is asked of the database too (the conversation's
    size): a refusal there is the store's error, saying what it could not do, as any other."""
    path = tmp_path / "refusing.db"
    async with SqlConversationStore(f"sqlite:///{path}") as store:
        await store.append_many(turns("c1", 5))
        assert await search(store, "parcel")  # its words counted: the next search asks
        with sqlite3.connect(path) as other:
            other.execute("ALTER TABLE threadline_conversations RENAME TO elsewhere")
        with pytest.raises(StoreError, match="could not search"):
            await search(store, "parcel")
