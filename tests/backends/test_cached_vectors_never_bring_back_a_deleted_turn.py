"""A search by meaning answered from this process's cached vectors never returns a turn that
another process deleted (or forgot) meanwhile, nor misses what this process indexed.

Two stores on one database (a SQLite file, a PostgreSQL schema) stand for two processes: the
bot, which has searched a conversation (its vectors now cached), and `threadline people
forget` or retention run elsewhere, whose deletion the bot may not hear.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.history.embedding import embedded, index_everything, real_embedder, vectors_of
from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore
from threadline.history.meaning import search_windows

COACHING = "I train the under-12 football team on Saturdays"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("pg_url"))


async def _found(store: SqlConversationStore, question: str) -> list[str]:
    hits = await vectors_of(store).nearest("c1", embedded(question), real_embedder().name,
                                           limit=5)
    turns = {t.id: t.content for t in await store.get_by_ids("c1", [h.message_id for h in hits])}
    return [turns[hit.message_id] for hit in hits]


async def test_a_turn_deleted_elsewhere_is_not_found_from_the_cache(url: str) -> None:
    async with SqlConversationStore(url) as bot, SqlConversationStore(url) as elsewhere:
        await bot.append_many([turn(COACHING, conversation_id="c1"),
                               turn("the van is parked behind the shop", conversation_id="c1",
                                    minute=1)])
        await index_everything(bot)
        assert (await _found(bot, "Which sport does she coach?"))[0] == COACHING

        coaching = [t for t in await elsewhere.get("c1") if t.content == COACHING]
        assert await elsewhere.delete_messages("c1", [t.id for t in coaching]) == 1
        assert await _found(bot, "Which sport does she coach?") == [
            "the van is parked behind the shop"]


async def test_vectors_this_process_stores_are_searched_at_once(url: str) -> None:
    async with SqlConversationStore(url) as bot:
        await bot.append(turn("the van is parked behind the shop", conversation_id="c1"))
        await index_everything(bot)
        assert await _found(bot, "Which sport does she coach?") == [
            "the van is parked behind the shop"]
        await bot.append(turn(COACHING, conversation_id="c1", minute=1))
        await index_everything(bot)
        assert (await _found(bot, "Which sport does she coach?"))[0] == COACHING


async def test_new_vectors_join_the_cache_and_an_edit_drops_it(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The indexer stores each new turn's vector moments after it is said: a conversation
    searched before (even while it had none) is searched again from memory, new turns
    included, not read again whole from the database; an edit makes its vectors stale, so
    the next search reads them."""
    async with SqlConversationStore(url) as bot:
        await bot.append(turn("the van is parked behind the shop", conversation_id="c1"))
        assert await _found(bot, "Which sport does she coach?") == []  # cached: no vectors
        await index_everything(bot)
        assert await _found(bot, "Which sport does she coach?") == [
            "the van is parked behind the shop"]

        actions: list[str] = []
        run = bot.run

        async def counted(action: str, *args: Any, **kwargs: Any) -> Any:
            actions.append(action)
            return await run(action, *args, **kwargs)

        monkeypatch.setattr(bot, "run", counted)
        await bot.append(turn(COACHING, conversation_id="c1", minute=1))
        await index_everything(bot)
        assert "store turns' vectors" in actions
        actions.clear()
        assert (await _found(bot, "Which sport does she coach?"))[0] == COACHING
        assert "read a conversation's vectors" not in actions

        [coaching] = [t for t in await bot.get("c1") if t.content == COACHING]
        await bot.edit_message("c1", coaching.id, "I coach the under-12 rugby team")
        await index_everything(bot)
        actions.clear()
        assert "rugby" in (await _found(bot, "Which sport does she coach?"))[0]
        assert "read a conversation's vectors" in actions


async def test_recall_by_meaning_shows_neither_a_deleted_nor_an_excluded_turn(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall's search checks the turns found by meaning inside its own read (one read): one
    deleted elsewhere since its vector was cached is not shown, nor one the prompt already
    holds, and neither takes the place of a turn that may be shown."""
    async with SqlConversationStore(url) as bot, SqlConversationStore(url) as elsewhere:
        said = ["I train the under-12 football team on Saturdays",
                "my daughter plays in the under-12 football team",
                "the van is parked behind the shop"]
        await bot.append_many([turn(text, conversation_id="c1", minute=n)
                               for n, text in enumerate(said)])
        await index_everything(bot)
        question = "Which sport does she coach?"
        # Nearest first; the conversation's vectors are now cached.
        deleted, excluded, shown = await _found(bot, question)
        ids = {t.content: t.id for t in await bot.get("c1")}
        assert await elsewhere.delete_messages("c1", [ids[deleted]]) == 1

        reads: list[str] = []
        read = bot._backend.read

        async def counted(fn: Any, *args: Any) -> Any:
            reads.append(getattr(fn, "__name__", repr(fn)))
            return await read(fn, *args)

        monkeypatch.setattr(bot._backend, "read", counted)
        windows = await search_windows(bot, "c1", question, limit=2, context=0,
                                       token_cap=2000, exclude_ids={ids[excluded]})
        assert [m.content for w in windows for m in w.messages] == [shown]
        # Nothing read besides the search but, where the deletion was heard (PostgreSQL's
        # notifications), the conversation's vectors once more.
        assert reads in (["_search_windows"], ["_rows", "_search_windows"])
