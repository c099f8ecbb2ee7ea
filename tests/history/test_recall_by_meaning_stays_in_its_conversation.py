"""A search by meaning returns turns of the asked conversation only, inside the asked range.

Two conversations (and a DM) on each store (in memory, SQLite file, PostgreSQL) say nearly
the same things; the real model embeds them all. Asked with the exact words of another
conversation's turn, whose vector is the closest in the whole database, the search still
returns only the asked conversation's turns, leaves out the turns a prompt already holds and
those after the turn being answered, and never a summary.
"""

from __future__ import annotations

from tests.history.embedding import embedded, index_everything, real_embedder, vectors_of
from tests.history.helpers import BOB, turn
from threadline.history.model import MessageMetadata
from threadline.history.store import ConversationStore

OURS = "slack:T1:C1"
THEIRS = "slack:T1:C2"
SECRET = "the alarm code for the warehouse is 4471"


async def _two_conversations(store: ConversationStore) -> None:
    await store.append_many([
        turn("I train the under-12 football team on Saturdays", conversation_id=OURS),
        turn("we moved the office to the fourth floor", conversation_id=OURS, minute=1),
        turn(SECRET, conversation_id=THEIRS, who=BOB, minute=2),
        turn("Bob coaches the basketball squad every Sunday", conversation_id=THEIRS,
             who=BOB, minute=3),
        turn("my salary went up in March", conversation_id="slack:T1:D9", scope="dm",
             minute=4),
        turn("the parking lot closes at nine", conversation_id=OURS, minute=5),
    ])
    summary = turn(f"Summary: {SECRET}", conversation_id=OURS, minute=6,
                   metadata=MessageMetadata(is_summary=True, summary_of=(1, 3)))
    await store.append(summary)


async def _contents(store: ConversationStore, question: str, *, exclude_ids: tuple[str, ...] = (),
                    through_sequence: int | None = None) -> list[str]:
    hits = await vectors_of(store).nearest(OURS, embedded(question), real_embedder().name,
                                           limit=10, exclude_ids=exclude_ids,
                                           through_sequence=through_sequence)
    turns = await store.get_by_ids(OURS, [hit.message_id for hit in hits])
    assert len(turns) == len(hits), "a hit that is not a turn of the asked conversation"
    by_id = {t.id: t.content for t in turns}
    return [by_id[hit.message_id] for hit in hits]


async def test_another_conversations_closest_turn_never_comes_back(
        store: ConversationStore) -> None:
    await _two_conversations(store)
    progress = await index_everything(store)
    assert progress.done == progress.total == 6  # the summary gets no vector
    for question in (SECRET, "what is the alarm code", "who coaches basketball on Sunday",
                     "my salary went up in March"):
        found = await _contents(store, question)
        assert set(found) <= {"I train the under-12 football team on Saturdays",
                              "we moved the office to the fourth floor",
                              "the parking lot closes at nine"}, question
        assert len(found) == 3


async def test_the_closest_turn_of_the_conversation_comes_first(
        store: ConversationStore) -> None:
    await _two_conversations(store)
    await index_everything(store)
    found = await _contents(store, "Which sport does she coach?")
    assert found[0] == "I train the under-12 football team on Saturdays"


async def test_turns_the_prompt_holds_and_later_turns_take_no_place(
        store: ConversationStore) -> None:
    await _two_conversations(store)
    await index_everything(store)
    ours = await store.get(OURS)
    first, second, third = ours
    assert await _contents(store, "football", exclude_ids=(first.id,)) == [
        c for c in await _contents(store, "football") if c != first.content]
    through = await _contents(store, "parking lot", through_sequence=second.sequence)
    assert third.content not in through and len(through) == 2
