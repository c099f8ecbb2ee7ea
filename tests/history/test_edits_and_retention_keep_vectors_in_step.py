"""A turn's vector follows the turn: an edited turn is embedded again from its new text, and
turns deleted by retention take their vectors with them (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.history.embedding import embedded, index_everything, real_embedder, vectors_of
from tests.history.helpers import T0, turn
from threadline.history.retention import prune_conversation
from threadline.history.store import ConversationStore

COACHING = "I train the under-12 football team on Saturdays"


async def _nearest_contents(store: ConversationStore, question: str) -> list[str]:
    hits = await vectors_of(store).nearest("c1", embedded(question), real_embedder().name,
                                           limit=3)
    by_id = {t.id: t.content for t in await store.get_by_ids("c1", [h.message_id for h in hits])}
    return [by_id[hit.message_id] for hit in hits]


async def test_an_edited_turn_is_embedded_again_from_its_new_text(
        store: ConversationStore) -> None:
    await store.append_many([turn("the van is parked behind the shop", conversation_id="c1"),
                             turn("see you tomorrow", conversation_id="c1", minute=1)]
                            + [turn(f"filler note {n}", conversation_id="c2", minute=2 + n)
                               for n in range(30)])
    await index_everything(store)
    old = (await store.get("c1"))[1]
    assert await store.edit_message("c1", old.id, COACHING)
    assert (await vectors_of(store).progress(real_embedder().name)) == (31, 32)
    embedded_again = 0
    async with asyncio.timeout(10):  # PostgreSQL tells of the edit through LISTEN, a moment on
        while (again := await index_everything(store)).done < again.total or not embedded_again:
            embedded_again += again.embedded
            await asyncio.sleep(0.05)
    assert embedded_again == 1 and again.done == again.total == 32
    assert (await _nearest_contents(store, "Which sport does she coach?"))[0] == COACHING


async def test_retention_deletes_the_vectors_of_the_turns_it_prunes(
        store: ConversationStore) -> None:
    await store.append_many([turn(f"old note {n}", conversation_id="c1", minute=n)
                             for n in range(5)]
                            + [turn(COACHING, conversation_id="c1", minute=24 * 60)])
    await index_everything(store)
    assert await prune_conversation(store, "c1", T0 + timedelta(hours=12)) == 5
    assert await vectors_of(store).progress(real_embedder().name) == (1, 1)
    assert await _nearest_contents(store, "old note") == [COACHING]
