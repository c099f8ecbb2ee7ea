"""A long conversation (a knowledge source's sections) is searched by its own plan on SQLite
and PostgreSQL (its rarest words, the conversation filtered outside the full-text match):
it still finds its own turns, and never another conversation's that share the words."""

from __future__ import annotations

import pytest

from tests.history.helpers import ANN, BOB, turn
from threadline.backends.sql import postgres, sqlite
from threadline.backends.sql.lexeme_counts import english_stems
from threadline.backends.sql.operations import conversation_sizes
from threadline.backends.sql.postgres import PostgresRunner
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
        store: ConversationStore) -> None:
    # Counted once for the whole conversation (ts_stat), by lexeme: "axolotl" in two turns'
    # text, "ann" in two turns' speaker's name, "heater" and "heat" under the prefix "heat".
    await store.append_many([
        turn("the axolotl tank", conversation_id="postings", who=BOB, minute=0),
        turn("an axolotl heater", conversation_id="postings", who=ANN, minute=1),
        turn("ann's lunch is heating", conversation_id="postings", who=BOB, minute=2),
        turn("somewhere else", conversation_id="postings-elsewhere", who=ANN, minute=3),
    ])
    query = SearchQuery.parse("axolotl ann")

    def counted(runner: PostgresRunner) -> tuple[dict[str, int], int, dict[str, str]]:
        counts = runner.lexemes.counts(runner, "postings")
        stems = english_stems(runner, query.terms)
        return ({term: counts.postings(stems[term]) for term in query.terms},
                counts.postings("heat", prefix=True), english_stems(runner, ["is"]))

    words, heat, stop = await store.run("count", counted)  # type: ignore[attr-defined]
    assert words == {"axolotl": 2, "ann": 2}
    assert heat == 2
    assert stop == {"is": ""}  # a stop word has no lexeme


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
async def test_a_long_conversation_under_others_best_matches_still_finds_its_own(
        store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # The index's best matches are read first (HEAD_SHARE times the limit); here they are all
    # another conversation's, so the search must look past them.
    monkeypatch.setattr(sqlite, "LONG_CONVERSATION", 3)
    monkeypatch.setattr(sqlite, "HEAD_SHARE", 1)
    long, other = "long-under-others", "long-others-above"
    await store.append_many([
        *(turn("axolotl heater axolotl heater", conversation_id=other, who=ANN, minute=n)
          for n in range(4)),
        turn("the quarterly report is due friday", conversation_id=long, who=BOB, minute=5),
        turn("our axolotl tank needs a heater and a long lid", conversation_id=long, who=ANN,
             minute=6),
        turn("lunch at noon?", conversation_id=long, who=ANN, minute=7),
        turn("the report again", conversation_id=long, who=BOB, minute=8),
    ])
    conversation_sizes.remember(long, 4)
    hits = await store.search(long, "axolotl heater", limit=2)
    assert [h.content for h in hits] == ["our axolotl tank needs a heater and a long lid"]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
async def test_a_loose_words_postings_are_counted_as_it_is_matched(
        store: ConversationStore) -> None:
    # "considerations" (porter: "consider") matches by its stem's prefix, "consid"*, which
    # holds "considered" and "considering" (porter: "consid") too: its postings are the
    # prefix's, three, not the exact word's one.
    await store.append_many([
        turn("the considerations", conversation_id="loose-postings", who=BOB, minute=0),
        turn("we considered it", conversation_id="loose-postings", who=ANN, minute=1),
        turn("considering lunch", conversation_id="loose-postings", who=BOB, minute=2),
        turn("lunch at noon", conversation_id="loose-postings", who=ANN, minute=3),
    ])
    query = SearchQuery.parse("considerations")
    counts = await store.run("count", lambda runner: [  # type: ignore[attr-defined]
        sqlite._capped_count(runner, sqlite.fts5_term(term, query)) for term in query.terms])
    assert counts == [3]


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
async def test_a_long_conversations_common_words_rank_their_newest_matches(
        store: ConversationStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three turns hold "report", more than LONG_RANKED: only the newest two are ranked.
    monkeypatch.setattr(postgres, "LONG_CONVERSATION", 3)
    monkeypatch.setattr(postgres, "LONG_RANKED", 2)
    long = "long-common-words"
    await store.append_many([
        turn("report report report", conversation_id=long, who=BOB, minute=0),
        turn("the report is late", conversation_id=long, who=ANN, minute=1),
        turn("lunch at noon?", conversation_id=long, who=ANN, minute=2),
        turn("a report", conversation_id=long, who=BOB, minute=3),
    ])
    conversation_sizes.remember(long, 4)
    hits = await store.search(long, "report", limit=3)
    assert [h.content for h in hits] == ["a report", "the report is late"]
