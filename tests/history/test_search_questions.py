"""Search that understands a question, in several languages, on every store."""

from __future__ import annotations

from tests.history.helpers import ANN, BOB, turn
from threadline.history.store import ConversationStore


async def test_a_german_question_finds_the_german_turn(store: ConversationStore) -> None:
    await store.append_many([
        turn("Meine Bestellung wurde gestern verschickt", minute=0),
        turn("Das Wetter ist heute schön", who=BOB, minute=1),
    ])
    hits = await store.search("c1", "Wann wurde meine Bestellung verschickt?")
    assert hits[0].content == "Meine Bestellung wurde gestern verschickt"


async def test_a_japanese_question_finds_the_japanese_turn(store: ConversationStore) -> None:
    await store.append_many([
        turn("田中さんの注文は昨日発送されました", minute=0),
        turn("今日はいい天気ですね", who=BOB, minute=1),
    ])
    hits = await store.search("c1", "注文はいつ発送されましたか")
    assert [h.content for h in hits][:1] == ["田中さんの注文は昨日発送されました"]


async def test_quoted_phrases_rank_higher(store: ConversationStore) -> None:
    await store.append_many([
        turn("the card was blocked, and the credit limit is fine", minute=0),
        turn("my credit card was declined at the shop", minute=1),
        turn("blocked card again", minute=2),
    ])
    hits = await store.search("c1", 'why was the "credit card" blocked')
    assert hits[0].content == "my credit card was declined at the shop"


async def test_a_name_in_the_question_counts_for_that_speaker(store: ConversationStore) -> None:
    await store.append_many([
        turn("I adopted a cat", who=BOB, minute=0),
        turn("I adopted a cat too, a grey one", who=ANN, minute=1),
    ])
    hits = await store.search("c1", "Which cat did Bob adopt?")
    assert hits[0].participant == BOB


async def test_windows_respect_the_cap_and_the_conversation_edges(
    store: ConversationStore,
) -> None:
    await store.append_many([turn(f"pineapple fact number {i} " + "filler " * 40, minute=i)
                             for i in range(6)])
    await store.append(turn("pineapple elsewhere", conversation_id="c2"))
    windows = await store.search_context("c1", "pineapple", limit=6, context=1, token_cap=150)
    assert windows and sum(w.token_count for w in windows) <= 150
    everything = await store.search_context("c1", "pineapple", limit=6, context=1,
                                            token_cap=100_000)
    assert len(everything) == 1  # all six hits touch: one window
    assert [m.content.split()[3] for m in everything[0].messages] == [str(i) for i in range(6)]
    assert all(m.conversation_id == "c1" for w in everything for m in w.messages)


async def test_common_words_give_way_to_rare_ones(sqlite_url: str) -> None:
    """A word in most turns of a big store is dropped from the search; a rare one still finds."""
    from threadline.backends.sql import SqlConversationStore
    from threadline.history.search import SearchQuery, prune_common

    counts = {"hello": 90_000, "world": 50_000, "miso": 3}
    pruned = prune_common(SearchQuery.parse("hello world miso"), counts.__getitem__,
                          max_matches=40_000)
    assert pruned.terms == ("miso",)
    only_common = prune_common(SearchQuery.parse("hello world"), counts.__getitem__,
                               max_matches=40_000)
    assert only_common.terms == ("world",)  # the rarest always stays
    async with SqlConversationStore(sqlite_url) as store:
        await store.append_many([turn(f"hello world {i}", minute=i) for i in range(50)]
                                + [turn("hello, my cat Miso says hello", minute=60)])
        hits = await store.search("c1", "hello world, what is the cat called? Miso?")
        assert hits[0].content == "hello, my cat Miso says hello"
