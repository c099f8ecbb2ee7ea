"""Person memory fuses the person's own words found by meaning with those found by words.

Ann said in one channel that she trains a youth football team; in another channel of the same
workspace she asks which sport she coaches (no word in common). With meaning on, her memory
(`PersonMemory.search`, as recall and the search tool use it) brings her turn; by words alone it
cannot. Bob said nearly the same in the same channel: his words never come back for Ann.
"""

from __future__ import annotations

from tests.history.embedding import index_everything
from tests.people.test_person_memory_stays_in_its_scope import ANN, BOB, said
from threadline.history.store import ConversationStore
from threadline.people import person_memory_for

ANNS = "I train the under-12 football team on Saturdays"
BOBS = "I train the under-10 basketball team on Sundays"


async def test_her_own_words_are_found_by_meaning_and_nobody_elses(
        store: ConversationStore) -> None:
    await store.append_many([
        said(ANNS, "slack:T1:C1", ANN, channel_name="general"),
        said(BOBS, "slack:T1:C1", BOB, minute=1, channel_name="general"),
        said("the printer on the third floor is jammed again", "slack:T1:C1", ANN, minute=2),
    ])
    await index_everything(store)
    asking = said("Which sport do I coach?", "slack:T1:C5", ANN, minute=9)

    by_meaning = await person_memory_for(store, asking)
    assert by_meaning is not None and by_meaning.meaning is not None
    found = [m.content for m in await by_meaning.search(asking.content)]
    assert ANNS in found
    assert BOBS not in found

    by_words = await person_memory_for(store, asking, by_meaning=False)
    assert by_words is not None and by_words.meaning is None
    assert ANNS not in [m.content for m in await by_words.search(asking.content)]
