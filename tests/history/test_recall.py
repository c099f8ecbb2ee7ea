"""Automatic recall and the conversation_search tool: facts reach the prompt, scoped by closure."""

from __future__ import annotations

import pytest

from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.backends.sql import SqlConversationStore
from threadline.history import InMemoryConversationStore
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.recall import RECALL_HEADER
from threadline.history.store import ConversationStore


async def channel_with_old_fact(store: ConversationStore) -> Transcript:
    t = Transcript()
    t.say(CAROL, "FYI my cat is called Miso and she hates the vet")  # addressed to nobody
    for i in range(200):
        t.say(BOB if i % 2 else ANN, f"small talk {i} about the weather and lunch plans")
    t.say(SUPPORT, "Hello Carol, how can I help?")
    t.say(CAROL, "@support what is my cat called?", mentions=("support",))
    await t.store_in(store)
    return t


async def test_recall_brings_a_fact_from_200_turns_ago(store: ConversationStore) -> None:
    t = await channel_with_old_fact(store)
    on = await assemble_prompt(store, t.conversation_id, "support", "Support",
                               AssemblerOptions(max_turns_to_load=50))
    assert t.turns[0].id in on.recalled_ids
    assert t.turns[0].id in on.recall_hit_ids
    assert set(on.recall_hit_ids) <= set(on.recalled_ids)
    block = next(m for m in on.messages if m.content.startswith(RECALL_HEADER))
    assert "[Fri 2024-03-01]\nCarol: FYI my cat is called Miso" in block.content
    assert on.token_count <= 3000
    off = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                AssemblerOptions(max_turns_to_load=50, recall=False))
    assert not off.recalled_ids
    assert all("Miso" not in m.content for m in off.messages)


async def test_recall_block_is_identical_across_assemblies(store: ConversationStore) -> None:
    t = await channel_with_old_fact(store)
    first = await assemble_prompt(store, t.conversation_id, "support", "Support")
    second = await assemble_prompt(store, t.conversation_id, "support", "Support")
    assert first.messages == second.messages
    assert first.recalled_ids == second.recalled_ids


async def test_recall_never_repeats_a_turn_already_in_the_prompt() -> None:
    store = InMemoryConversationStore()
    t = Transcript()
    t.say(ANN, "@support my order number is 4412", mentions=("support",))
    t.say(ANN, "@support what was my order number?", mentions=("support",))
    await t.store_in(store)
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support")
    assert prompt.recalled_ids == []
    assert sum("4412" in m.content for m in prompt.messages) == 1


async def test_search_tool_is_scoped_by_closure(store: ConversationStore) -> None:
    mine = Transcript("slack:T1:C1")
    mine.say(ANN, "our launch date is in May")
    theirs = Transcript("slack:T1:C2")
    theirs.say(BOB, "the secret launch code is 0000")
    await mine.store_in(store)
    await theirs.store_in(store)
    tool = make_conversation_search_tool(store, "slack:T1:C1")
    assert tool.name == "conversation_search"
    assert tool.input_schema["required"] == ["query"]
    found = await tool.run({"query": "launch"})
    assert "May" in found and "0000" not in found
    for sneaky in ({"query": "launch", "conversation_id": "slack:T1:C2"},
                   {"query": "launch", "conversationId": "slack:T1:C2"},
                   {"query": "launch", "channel": "C2"}):
        answer = await tool.run(sneaky)
        assert answer.startswith("error:") and "0000" not in answer
    assert "0000" not in await tool.run({"query": "secret launch code 0000 slack:T1:C2"})


@pytest.mark.parametrize("bad", [{}, {"query": ""}, {"query": 5}, {"query": "x", "limit": 0},
                                 {"query": "x", "limit": "5"}, {"query": "x" * 10_000}])
async def test_search_tool_explains_bad_input(bad: dict[str, object]) -> None:
    tool = make_conversation_search_tool(InMemoryConversationStore(), "c1")
    assert (await tool.run(bad)).startswith("error:")  # type: ignore[arg-type]


async def test_search_tool_output_names_who_and_when(sqlite_url: str) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        t = Transcript()
        t.say(ANN, "hello")
        t.say(BOB, "I named my dog Rex")
        t.say(ANN, "cute")
        await t.store_in(store)
        tool = make_conversation_search_tool(store, t.conversation_id)
        answer = await tool.run({"query": "What did Bob name his dog?", "limit": 1})
        assert answer.splitlines() == [
            "[Fri 2024-03-01]",
            "Ann: hello",
            "Bob: I named my dog Rex",
            "Ann: cute",
        ]


async def test_a_summarized_turn_is_still_recalled_word_for_word() -> None:
    """A summary is a retelling that may drop the detail asked for; the turn itself is found."""
    from tests.history.test_assembler_summaries import CountingSummarizer

    store = InMemoryConversationStore()
    t = Transcript()
    t.say(ANN, "@support my locker code is 7781", mentions=("support",))
    for i in range(14):
        t.say(ANN, f"@support chat {i}", mentions=("support",))
    t.say(ANN, "@support what is my locker code?", mentions=("support",))
    await t.store_in(store)
    prompt = await assemble_prompt(
        store, t.conversation_id, "support", "Support",
        AssemblerOptions(rolling_summary_threshold=10), CountingSummarizer())
    assert prompt.summary_created
    assert prompt.summary_used
    assert t.turns[0].id not in prompt.included_ids  # the summary covers it...
    assert t.turns[0].id in prompt.recalled_ids  # ...and recall shows it as said
    recalled = [m.content for m in prompt.messages if m.content.startswith(RECALL_HEADER)]
    assert any("my locker code is 7781" in block for block in recalled)


async def test_scope_and_time_window_limit_what_is_loaded() -> None:
    from datetime import timedelta

    from threadline.history import StoredMessage
    from threadline.history.model import utc_now

    store = InMemoryConversationStore()
    now = utc_now()
    for minutes_ago, scope, text in ((90, "channel", "@support old channel"),
                                     (5, "thread", "@support new thread"),
                                     (1, "channel", "@support new channel")):
        await store.append(StoredMessage(conversation_id="c", participant=ANN, content=text,
                                         scope=scope,  # type: ignore[arg-type]
                                         timestamp=now - timedelta(minutes=minutes_ago)))
    recent = await assemble_prompt(store, "c", "support", "Support",
                                   AssemblerOptions(time_window_minutes=30, recall=False))
    assert [m.content for m in recent.messages] == [
        "Ann: @support new thread\n\nAnn: @support new channel"]
    channel_only = await assemble_prompt(store, "c", "support", "Support",
                                         AssemblerOptions(scope="channel", recall=False))
    assert "thread" not in channel_only.messages[0].content
    assert "old channel" in channel_only.messages[0].content


async def test_search_tool_leaves_out_the_turn_being_answered() -> None:
    store = InMemoryConversationStore()
    t = Transcript()
    t.say(ANN, "my parcel went to Lisbon")
    for i in range(3):
        t.say(BOB, f"unrelated chatter {i}")
    asked = t.say(BOB, "where did the parcel go?")
    await t.store_in(store)
    tool = make_conversation_search_tool(store, t.conversation_id, exclude_ids=(asked.id,))
    answer = await tool.run({"query": "where did the parcel go?", "limit": 5})
    assert "my parcel went to Lisbon" in answer
    assert "where did the parcel go?" not in answer
    plain = make_conversation_search_tool(store, t.conversation_id)
    assert "where did the parcel go?" in await plain.run({"query": "parcel", "limit": 5})
