"""The token budget: exact totals never exceed it, pairs stay whole, huge turns are truncated."""

from __future__ import annotations

import itertools

from tests.history.transcripts import ANN, BOB, SUPPORT, Transcript
from threadline.agents.convert import to_anthropic
from threadline.history import InMemoryConversationStore, ToolCall, ToolExchange, ToolResult
from threadline.history.assembler import AssemblerOptions, assemble_prompt, prompt_tokens
from threadline.history.tokens import default_counter


async def test_totals_never_exceed_the_budget() -> None:
    t = Transcript()
    for i in range(120):
        t.say(ANN if i % 2 else BOB, f"message {i} " + "words " * (i % 17), mentions=("support",))
    store = InMemoryConversationStore()
    await t.store_in(store)
    for budget in (60, 150, 400, 1000, 3000):
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       AssemblerOptions(token_budget=budget, recall=False,
                                                        max_turns_to_load=200))
        assert prompt.token_count <= budget
        assert prompt.token_count == prompt_tokens(prompt.messages, default_counter())
        assert prompt.included_ids[-1] == t.turns[-1].id  # the newest is always kept
        everything_fits = sum(m.token_count or 0 for m in await store.get(t.conversation_id))
        assert bool(prompt.dropped_for_budget_ids) == (everything_fits > budget)


async def test_a_huge_newest_message_is_truncated_with_a_marker() -> None:
    t = Transcript()
    t.say(ANN, "earlier", mentions=("support",))
    t.say(ANN, "@support " + "lorem ipsum dolor " * 3000)
    store = InMemoryConversationStore()
    await t.store_in(store)
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                   AssemblerOptions(token_budget=500, recall=False))
    assert prompt.token_count <= 500
    assert prompt.messages[-1].content.endswith("[... message truncated to fit the token budget]")
    assert any("truncated" in note for note in prompt.notes)


async def test_a_tool_call_and_its_result_stay_together() -> None:
    exchange = ToolExchange(ToolCall("toolu_9", "lookup", {"order": "4412"}),
                            ToolResult("toolu_9", "shipped on Monday " * 30))
    t = Transcript()
    t.say(ANN, "@support where is 4412?")
    store = InMemoryConversationStore()
    await t.store_in(store)
    await store.append(t.turns[0].__class__(
        conversation_id=t.conversation_id, participant=SUPPORT, content="It shipped.",
        tool_exchanges=(exchange,)))
    await store.append(t.say(ANN, "@support thanks!"))
    for budget in (60, 200, 1000):
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       AssemblerOptions(token_budget=budget, recall=False))
        _system, turns = to_anthropic(prompt.messages)
        uses = [b["id"] for m in turns for b in m["content"] if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for m in turns for b in m["content"]
                   if b["type"] == "tool_result"]
        assert uses == results
        assert prompt.token_count <= budget


async def test_the_prefix_stays_stable_while_the_conversation_grows() -> None:
    store = InMemoryConversationStore()
    t = Transcript()
    firsts = []
    for i in range(80):
        await store.append(t.say(ANN, f"@support question {i} " + "detail " * 20,
                                 mentions=("support",)))
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       AssemblerOptions(token_budget=400, recall=False))
        if prompt.dropped_for_budget_ids:
            firsts.append(prompt.included_ids[0])
    changes = sum(a != b for a, b in itertools.pairwise(firsts))
    assert len(firsts) > 40 and changes <= len(firsts) // 5  # moves in steps, not every turn


async def test_the_loading_window_moves_in_steps_and_never_holds_fewer_turns() -> None:
    # Past `max_turns_to_load` turns, the first loaded turn used to move every turn: no two
    # prompts shared a prefix, so no provider's cache could serve the history.
    store = InMemoryConversationStore()
    t = Transcript()
    firsts = []
    for i in range(120):
        await store.append(t.say(ANN, f"@support question {i}", mentions=("support",)))
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       AssemblerOptions(recall=False, max_turns_to_load=20,
                                                        rolling_summary_threshold=1000))
        if i >= 20:
            assert 20 <= len(prompt.included_ids) < 30
            firsts.append(prompt.included_ids[0])
    changes = sum(a != b for a, b in itertools.pairwise(firsts))
    assert changes <= len(firsts) // 10 + 1
