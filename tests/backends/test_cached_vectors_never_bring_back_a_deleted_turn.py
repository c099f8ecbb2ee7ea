"""A search by meaning answered from this process's cached vectors never returns a turn that
another process deleted (or forgot) meanwhile, nor misses what this process indexed.

Two stores on one database (a SQLite file, a PostgreSQL schema) stand for two processes: the
bot, which has searched a conversation (its vectors now cached), and `threadline people
forget` or retention run elsewhere, whose deletion the bot may not hear.
"""

from __future__ import annotations

import pytest

from tests.history.embedding import embedded, index_everything, real_embedder, vectors_of
from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore

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
