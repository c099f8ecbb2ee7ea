"""Questions find answers that share only a near-stem, or only the month, with them."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.history.helpers import ANN, BOB, turn
from threadline.history import StoredMessage
from threadline.history.search import SearchQuery, months_named
from threadline.history.store import ConversationStore


async def test_a_near_stem_finds_the_answer(store: ConversationStore) -> None:
    await store.append_many([
        turn("ok", who=BOB, minute=0),
        turn("sure", who=BOB, minute=1),
        turn("I signed up for counseling classes", who=BOB, minute=2),
        turn("yes", who=BOB, minute=3),
        turn("I am allergic to peanuts", who=ANN, minute=4),
        turn("fine", who=ANN, minute=5),
    ])
    [counselor] = await store.search("c1", "Is Bob a counselor?", limit=1)
    assert counselor.content == "I signed up for counseling classes"
    [allergy] = await store.search("c1", "What allergy does Ann have?", limit=1)
    assert allergy.content == "I am allergic to peanuts"


def on(day: datetime, text: str) -> StoredMessage:
    return StoredMessage(conversation_id="c1", participant=ANN, content=text, timestamp=day)


async def test_a_month_in_the_question_favours_turns_from_then(store: ConversationStore) -> None:
    march, july = (datetime(2023, 3, 10, tzinfo=UTC), datetime(2023, 7, 15, tzinfo=UTC))
    await store.append_many([on(july, "we went hiking at the lake"),
                             on(march, "we went hiking at the lake"),
                             on(datetime(2023, 11, 2, tzinfo=UTC), "rain all day, no walk")])
    for month, day in (("July", july), ("March", march)):
        [hit] = await store.search("c1", f"Where did Ann go hiking in {month} 2023?", limit=1)
        assert hit.timestamp == day
        windows = await store.search_context("c1", f"hiking in {month}?", limit=1, context=0)
        assert [m.timestamp for w in windows for m in w.messages] == [day]


def test_month_names_are_read_only_where_they_are_months() -> None:
    assert months_named("What did she do in July 2023?") == ((2023, 7),)
    assert months_named("in May, and Sept. 2022") == ((None, 5), (2022, 9))
    assert months_named("May I ask what you may do?") == ()
    loose = SearchQuery.parse("Did Carol see the counselor?").loose
    assert "counselor" in loose and "carol" not in loose  # names match exactly
