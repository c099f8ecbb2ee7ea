"""A long conversation (a knowledge source's sections) is searched by its own plan on SQLite
and PostgreSQL (its rarest words, the conversation filtered outside the full-text match):
it still finds its own turns, and never another conversation's that share the words."""

from __future__ import annotations

import pytest

from tests.history.helpers import ANN, BOB, turn
from threadline.backends.sql import postgres, sqlite
from threadline.backends.sql.operations import WordCounts, conversation_sizes
from threadline.history.search import SearchQuery
from threadline.history.store import ConversationStore


@pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)
async def test_a_long_conversation_finds_its_own_turns_only(
        store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for dialect in (sqlite, postgres):
        monkeypatch.setattr(dialect, "LONG_CONVERSATION", 3)
    long, other = "long-conversation-search", "long-conversation-elsewhere"
    await store.append_many([
        turn("the quarterly report is due friday", conversation_id=long, who=BOB, minute=0),
        turn("our axolotl tank needs a heater", conversation_id=long, who=ANN, minute=1),
        turn("the report looks fine", conversation_id=long, who=BOB, minute=2),
        turn("lunch at noon?", conversation_id=long, who=ANN, minute=3),
        turn("the report again", conversation_id=long, who=BOB, minute=4),
        turn("axolotl tank heater axolotl heater", conversation_id=other, who=ANN, minute=5),
    ])
    conversation_sizes.remember(long, 5)  # as a first search would have read it
    hits = await store.search(long, "What does the axolotl tank need, per the report?",
                              limit=3)
    assert hits[0].content == "our axolotl tank needs a heater"
    assert {h.conversation_id for h in hits} == {long}


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
async def test_a_words_postings_count_its_turns_and_its_speakers_names(
        store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted without the weights A (text) and B (speaker's name) the GIN index would recheck.
    monkeypatch.setattr(postgres, "_capped_counts", WordCounts())
    await store.append_many([
        turn("the axolotl tank", conversation_id="postings", who=BOB, minute=0),
        turn("an axolotl heater", conversation_id="postings", who=ANN, minute=1),
        turn("ann's lunch", conversation_id="postings", who=BOB, minute=2),
    ])
    query = SearchQuery.parse("axolotl ann")
    counts = await store.run("count", lambda runner: [  # type: ignore[attr-defined]
        postgres._capped_count(runner, term, query) for term in query.terms])
    assert dict(zip(query.terms, counts, strict=True)) == {"axolotl": 2, "ann": 2}
