"""The contract every ConversationStore keeps, run against memory, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from tests.history.helpers import ANN, BOB, SUPPORT, T0, turn
from threadline.errors import SearchQueryError
from threadline.history import StoredMessage, ToolCall, ToolExchange, ToolResult
from threadline.history.store import ConversationStore


async def test_append_is_idempotent_on_id(store: ConversationStore) -> None:
    message = turn("hello", id="m-1")
    assert await store.append(message) is True
    assert await store.append(message) is False
    assert [m.id for m in await store.get("c1")] == ["m-1"]


async def test_a_redelivered_platform_event_leaves_one_row(store: ConversationStore) -> None:
    first = turn("hi", metadata={"channel_type": "slack", "message_id": "1700000000.0001"})
    retry = turn("hi", metadata={"channel_type": "slack", "message_id": "1700000000.0001"})
    assert first.id != retry.id
    assert await store.append(first) is True
    assert await store.append(retry) is False
    assert await store.count("c1") == 1
    other_conversation = turn("hi", conversation_id="c2",
                              metadata={"message_id": "1700000000.0001"})
    assert await store.append(other_conversation) is True


async def test_order_is_arrival_not_clock(store: ConversationStore) -> None:
    same_time = [turn(f"turn {i}", minute=0) for i in range(5)]
    later_clock_first = turn("clock says later", minute=30)
    await store.append(later_clock_first)
    for message in same_time:
        await store.append(message)
    got = await store.get("c1")
    assert [m.content for m in got] == ["clock says later"] + [f"turn {i}" for i in range(5)]
    sequences = [m.sequence for m in got]
    assert sequences == sorted(sequences) and len(set(sequences)) == 6


async def test_limit_returns_most_recent_oldest_first(store: ConversationStore) -> None:
    await store.append_many([turn(f"t{i}", minute=i) for i in range(10)])
    assert [m.content for m in await store.get("c1", limit=3)] == ["t7", "t8", "t9"]
    assert await store.get("c1", limit=0) == []


async def test_filters(store: ConversationStore) -> None:
    await store.append_many([
        turn("ann early", minute=0),
        turn("bob in thread", who=BOB, minute=5, scope="thread"),
        turn("ann late", minute=10),
    ])
    assert [m.content for m in await store.get("c1", scope="thread")] == ["bob in thread"]
    assert [m.content for m in await store.get("c1", participant_ids=["U1"])] == [
        "ann early", "ann late"]
    window = await store.get("c1", since=T0 + timedelta(minutes=1),
                             before=T0 + timedelta(minutes=10))
    assert [m.content for m in window] == ["bob in thread"]
    first = (await store.get("c1"))[0]
    assert [m.content for m in await store.get("c1", after_sequence=first.sequence)] == [
        "bob in thread", "ann late"]


async def test_round_trip_keeps_every_field(store: ConversationStore) -> None:
    exchange = ToolExchange(
        call=ToolCall(id="toolu_1", name="lookup_order", input={"order": "A-7", "n": 2}),
        result=ToolResult(tool_call_id="toolu_1", content="shipped", is_error=False),
    )
    original = StoredMessage(
        id="r1", conversation_id="c1", participant=SUPPORT, content="It shipped.",
        timestamp=T0, scope="dm",
        metadata={"channel_type": "slack", "mentions": ["support", "U9"],
                  "message_id": "1700.2", "thread_id": "1700.1", "channel_id": "C1",
                  "custom": {"k": 1}},
        tool_exchanges=(exchange,),
    )
    await store.append(original)
    [back] = await store.get("c1")
    assert back.participant == SUPPORT and back.timestamp == T0 and back.scope == "dm"
    assert back.metadata["mentions"] == ("support", "U9")
    assert back.metadata.thread_id == "1700.1" and back.metadata["custom"] == {"k": 1}
    assert back.tool_exchanges == (exchange,)
    assert back.token_count is not None and back.token_count > 5


async def test_search_finds_other_word_forms_and_ranks(store: ConversationStore) -> None:
    await store.append_many([
        turn("The weather is nice today", minute=0),
        turn("My orders were shipped to Berlin last week", minute=1),
        turn("I shipped something once", who=BOB, minute=2),
        turn("Talk about something else", who=BOB, minute=3),
    ])
    hits = await store.search("c1", "When did the order ship to Berlin?")
    assert hits[0].content == "My orders were shipped to Berlin last week"
    assert "I shipped something once" in [h.content for h in hits]
    assert "The weather is nice today" not in [h.content for h in hits]


async def test_search_stays_inside_one_conversation(store: ConversationStore) -> None:
    await store.append(turn("secret launch code", conversation_id="slack:T1:C1"))
    await store.append(turn("public notes", conversation_id="slack:T1:C1:1700.1"))
    assert await store.search("slack:T1:C1:1700.1", "secret launch code") == []
    assert len(await store.search("slack:T1:C1", "launch")) == 1


@pytest.mark.parametrize("query", [
    '"', '""', "*", "NEAR(a b)", "a AND OR NOT b", "foo:bar", "a & b | !c", "(((", ")",
    "'; DROP TABLE threadline_messages; --", "conv_key:x", "{content}: x", "\x00", "",
    "   ", "^start", "a -b", "🙂", "שלום", 'unbalanced "quote',
])
async def test_search_never_raises_on_query_syntax(store: ConversationStore, query: str) -> None:
    await store.append(turn("a b start foo bar x content שלום 🙂 quote"))
    hits = await store.search("c1", query)
    assert isinstance(hits, list)
    assert await store.count("c1") == 1


async def test_search_rejects_huge_queries_clearly(store: ConversationStore) -> None:
    with pytest.raises(SearchQueryError, match="limit"):
        await store.search("c1", "word " * 2000)


async def test_search_results_are_capped_by_tokens(store: ConversationStore) -> None:
    await store.append_many([turn("apple " * 200, minute=i) for i in range(5)])
    hits = await store.search("c1", "apple", limit=5, token_cap=500)
    assert 1 <= len(hits) < 5
    assert sum(h.token_count or 0 for h in hits) <= 500 or len(hits) == 1


async def test_summaries_are_not_hits_and_not_in_get(store: ConversationStore) -> None:
    await store.append(turn("we discussed the refund policy"))
    summary = turn("Summary: refund policy discussed", metadata={"is_summary": True,
                                                                 "summary_of": (1, 1)})
    await store.append(summary)
    assert [h.content for h in await store.search("c1", "refund")] == [
        "we discussed the refund policy"]
    assert [m.content for m in await store.get("c1")] == ["we discussed the refund policy"]
    latest = await store.latest_summary("c1")
    assert latest is not None and latest.metadata.summary_of == (1, 1)


async def test_delete_only_inside_the_conversation(store: ConversationStore) -> None:
    mine = turn("delete me please", id="d1")
    theirs = turn("delete me please", id="d2", conversation_id="c2")
    await store.append_many([mine, theirs])
    assert await store.delete_messages("c1", ["d1", "d2"]) == 1
    assert await store.get("c1") == []
    assert [m.id for m in await store.get("c2")] == ["d2"]
    assert await store.search("c1", "delete") == []


async def test_edit_updates_text_and_search(store: ConversationStore) -> None:
    await store.append(turn("I like tea", id="e1"))
    assert await store.edit_message("c1", "e1", "I like coffee") is True
    assert await store.edit_message("c2", "e1", "nope") is False
    [edited] = await store.get("c1")
    assert edited.content == "I like coffee"
    assert await store.search("c1", "tea") == []
    assert [h.id for h in await store.search("c1", "coffee")] == ["e1"]


async def test_list_and_count(store: ConversationStore) -> None:
    await store.append(turn("old", conversation_id="a", minute=0))
    await store.append(turn("new", conversation_id="b", minute=5))
    await store.append(turn("newer", conversation_id="b", minute=6))
    listed = await store.list_conversations()
    assert [c.conversation_id for c in listed] == ["b", "a"]
    assert listed[0].message_count == 2 and listed[0].last_activity == T0 + timedelta(minutes=6)
    assert await store.count() == 3 and await store.count("b") == 2


async def test_hard_text_survives(store: ConversationStore) -> None:
    texts = ["x" * 100_000, "emoji 🧵🤖👍🏽", "مرحبا بالعالم", "nul\x00byte",
             "SQL ' OR 1=1 -- \" NEAR AND * : & ! ( )"]
    for i, text in enumerate(texts):
        assert await store.append(turn(text, minute=i))
    got = [m.content for m in await store.get("c1")]
    assert got[:3] == texts[:3]
    assert got[3] == "nul\ufffdbyte"  # documented: NUL is replaced, never dropped
    assert got[4] == texts[4]
    assert [h.content for h in await store.search("c1", "مرحبا")] == ["مرحبا بالعالم"]


async def test_fifty_concurrent_writers_keep_order(store: ConversationStore) -> None:
    async def writer(n: int) -> None:
        for i in range(10):
            await store.append(turn(f"w{n}-{i}", who=ANN))

    await asyncio.gather(*(writer(n) for n in range(50)))
    got = await store.get("c1")
    assert len(got) == 500
    assert len({m.sequence for m in got}) == 500
    for n in range(50):
        mine = [int(m.content.split("-")[1]) for m in got if m.content.startswith(f"w{n}-")]
        assert mine == list(range(10))


async def test_search_context_merges_neighbours(store: ConversationStore) -> None:
    contents = ["hello", "my cat is called Miso", "nice name", "weather talk", "more weather",
                "the cat Miso likes fish", "ok", "bye"]
    await store.append_many([turn(c, minute=i) for i, c in enumerate(contents)])
    windows = await store.search_context("c1", "What is the cat called?", limit=2, context=1)
    shown = [[m.content for m in w.messages] for w in windows]
    assert ["hello", "my cat is called Miso", "nice name"] in shown
    assert ["more weather", "the cat Miso likes fish", "ok"] in shown
    adjacent = await store.search_context("c1", "weather", limit=2, context=1)
    assert len(adjacent) == 1
    assert [m.content for m in adjacent[0].messages] == [
        "nice name", "weather talk", "more weather", "the cat Miso likes fish"]


async def test_nul_in_any_text_field_is_replaced_alike(store: ConversationStore) -> None:
    from threadline.history import Participant

    odd = Participant(kind="user", id="U\x001", display_name="An\x00n")
    await store.append(StoredMessage(conversation_id="c\x001", participant=odd, content="hi",
                                     metadata={"channel_name": "gen\x00eral",
                                               "mentions": ["a\x00b"]}))
    [back] = await store.get("c\ufffd1")
    assert back.participant.id == "U\ufffd1" and back.participant.display_name == "An\ufffdn"
    assert back.metadata.channel_name == "gen\ufffderal"
    assert back.metadata.mentions == ("a\ufffdb",)


async def test_get_reads_up_to_a_sequence(store: ConversationStore) -> None:
    await store.append_many([turn(f"t{i}", minute=i) for i in range(6)])
    third = (await store.get("c1"))[2]
    assert [m.content for m in await store.get("c1", through_sequence=third.sequence)] == [
        "t0", "t1", "t2"]
    assert [m.content for m in await store.get("c1", through_sequence=third.sequence,
                                               limit=2)] == ["t1", "t2"]
    assert [m.content for m in await store.get("c1", after_sequence=third.sequence - 1,
                                               through_sequence=third.sequence + 1)] == [
        "t2", "t3"]


async def test_search_context_leaves_out_shown_and_later_turns_inside_the_query(
    store: ConversationStore,
) -> None:
    contents = ["the parcel went to Lisbon", "ok", "the parcel came back", "fine", "hmm",
                "a parcel for Porto", "sure", "where is the parcel now?"]
    await store.append_many([turn(c, minute=i) for i, c in enumerate(contents)])
    stored = await store.get("c1")
    shown = {stored[2].id, stored[3].id}  # as if a prompt already held them
    windows = await store.search_context("c1", "parcel", limit=2, context=(1, 2),
                                         exclude_ids=shown,
                                         through_sequence=stored[6].sequence)
    returned = [m.content for w in windows for m in w.messages]
    hits = [h for w in windows for h in w.hit_ids]
    # Two hits still come back: the shown one is skipped, not counted against the limit.
    assert sorted(hits) == sorted([stored[0].id, stored[5].id])
    assert "the parcel came back" not in returned and "fine" not in returned  # shown
    assert "where is the parcel now?" not in returned  # after through_sequence
    assert sorted([m.content for m in w.messages] for w in windows) == [
        ["hmm", "a parcel for Porto", "sure"], ["the parcel went to Lisbon", "ok"]]
