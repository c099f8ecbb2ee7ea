"""Person memory by meaning finds the person's own words where the asking conversation may see
them, only: the scope cases of `test_person_memory_stays_in_its_scope`, with every turn
embedded by the real model.

The same history (Ann's and Bob's turns in two Slack workspaces, Slack DMs and a Telegram
DM) on each store. A search by meaning has no syntax to break out of, but its closest vector
may be anyone's: asked with the exact words of Bob's turn, of Ann's DM, of her other
workspace, the search still returns only what the asking conversation may see. Person memory
itself (`PersonMemory.search`) is checked with the vectors in place too, so these hold for
whatever ranking it fuses.
"""

from __future__ import annotations

import pytest

from tests.history.embedding import embedded, index_everything, real_embedder, vectors_of
from tests.people.test_person_memory_stays_in_its_scope import (
    ADVERSARIAL,
    ANN,
    BOB,
    _history,
    _memory,
    said,
)
from threadline.backends.parts import people_for
from threadline.history.person_memory import PersonMemory
from threadline.history.store import ConversationStore
from threadline.people.erase import forget_person

EVERY_TURN = ["my locker code is 5531", "my passport number is XK-77120",
              "my locker code is 9999", "locker code at the other company is 1234",
              "Bob's passport number is BB-33", "my shoe size is 44"]


async def _by_meaning(store: ConversationStore, memory: PersonMemory, query: str) -> list[str]:
    found = await vectors_of(store).nearest_for_speakers(
        memory.keys, embedded(query), real_embedder().name,
        exclude_conversation=memory.conversation_id, before=memory.before, limit=10)
    return [turn.content for turn, _ in found]


async def _everything_found(store: ConversationStore, memory: PersonMemory) -> set[str]:
    """What the person's memory returns for every turn's own words and every attack."""
    found: set[str] = set()
    for query in [*EVERY_TURN, *ADVERSARIAL]:
        found |= set(await _by_meaning(store, memory, query))
        found |= {m.content for m in await memory.search(query)}
    return found


@pytest.fixture
async def embedded_store(store: ConversationStore) -> ConversationStore:
    await _history(store)
    progress = await index_everything(store)
    assert progress.done == progress.total == len(EVERY_TURN)
    return store


async def test_a_group_reaches_the_persons_group_words_in_its_workspace_only(
        embedded_store: ConversationStore) -> None:
    asking = said("what is my locker code?", "slack:T1:C3", ANN, minute=9)
    memory = await _memory(embedded_store, asking)
    assert await _everything_found(embedded_store, memory) == {"my locker code is 5531"}
    assert (await _by_meaning(embedded_store, memory, "my locker code is 9999")
            == ["my locker code is 5531"])


async def test_a_dm_reaches_the_persons_own_words_and_never_anothers(
        embedded_store: ConversationStore) -> None:
    asking = said("what was my locker code?", "slack:T1:D9", ANN, scope="dm", minute=9)
    memory = await _memory(embedded_store, asking)
    assert await _everything_found(embedded_store, memory) == {
        "my locker code is 5531", "my passport number is XK-77120"}


async def test_another_person_reaches_only_their_own(
        embedded_store: ConversationStore) -> None:
    asking = said("what is my passport number?", "slack:T1:C3", BOB, minute=9)
    memory = await _memory(embedded_store, asking)
    # Bob's own turns are in the conversation he asks from's workspace, said before now.
    assert await _everything_found(embedded_store, memory) == {
        "my locker code is 9999", "Bob's passport number is BB-33"}


async def test_a_link_widens_a_dm_to_the_linked_identity_and_no_further(
        embedded_store: ConversationStore) -> None:
    asking = said("which shoe size did I say?", "slack:T1:D9", ANN, scope="dm", minute=9)
    assert "my shoe size is 44" not in await _everything_found(
        embedded_store, await _memory(embedded_store, asking))
    await people_for(embedded_store).link(["telegram:700", "slack:T1:UANN"], linked_by="code")
    assert await _everything_found(embedded_store, await _memory(embedded_store, asking)) == {
        "my locker code is 5531", "my passport number is XK-77120", "my shoe size is 44"}


async def test_forgetting_the_person_empties_their_memory_by_meaning(
        embedded_store: ConversationStore) -> None:
    await people_for(embedded_store).link(["slack:T1:UANN", "telegram:700"], linked_by="operator")
    await forget_person(embedded_store, "telegram:700")
    asking = said("my locker code and passport?", "slack:T1:D9", ANN, scope="dm", minute=9)
    assert await _everything_found(embedded_store, await _memory(embedded_store, asking)) == set()
    bob = said("my locker code?", "slack:T1:C3", BOB, minute=9)
    assert "my locker code is 9999" in await _everything_found(
        embedded_store, await _memory(embedded_store, bob))
