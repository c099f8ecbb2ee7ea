"""Recall fills the room the kept turns leave, sized by the text the model reads, never dropped."""

from __future__ import annotations

import pytest

from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.backends.sql import SqlConversationStore
from threadline.history import InMemoryConversationStore
from threadline.history.assembler import AssemblerOptions, assemble_prompt, prompt_tokens
from threadline.history.prompt import AssembledPrompt
from threadline.history.recall import RECALL_HEADER
from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter

QUESTION = "@support which roses did Carol plant in the garden?"
PLANTS = ["roses", "tulips", "basil", "ferns", "lilies", "mint"]


def garden_channel(addressed_chatter: int = 0) -> Transcript:
    """Carol talks about her garden to nobody in particular, then someone asks support."""
    t = Transcript()
    for i in range(60):
        t.say(CAROL, f"In the garden I planted {PLANTS[i % len(PLANTS)]} next to the old "
                     f"fence, row {i}, and the soil there is heavy clay that needs sand.")
        for n in range(4):
            t.say(BOB if n % 2 else ANN, f"nice, chat {i}.{n} about lunch and the weather")
    for i in range(addressed_chatter):
        t.say(ANN, f"@support question {i} about my invoice and the delivery schedule "
                   "for next week", mentions=("support",))
        t.say(SUPPORT, f"Answer {i}: the invoice is fine and delivery is on schedule.")
    t.say(ANN, QUESTION, mentions=("support",))
    return t


def recall_message(prompt: AssembledPrompt) -> str | None:
    return next((m.content for m in prompt.messages if m.content.startswith(RECALL_HEADER)),
                None)


@pytest.mark.parametrize("share", [0.0, 0.2, 1 / 3, 0.6, 0.9, 0.99])
@pytest.mark.parametrize("budget", [300, 1000, 3000])
async def test_any_recall_share_stays_in_budget_and_trims_the_block(
    share: float, budget: int
) -> None:
    store = InMemoryConversationStore()
    t = garden_channel()
    await t.store_in(store)
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                   AssemblerOptions(token_budget=budget, recall_share=share))
    assert prompt.token_count <= budget
    assert prompt.token_count == prompt_tokens(prompt.messages, default_counter())
    assert prompt.messages[-1].content == f"Ann: {QUESTION}"  # the newest turn, whole
    block = recall_message(prompt)
    assert block is not None and "roses" in block  # trimmed to fit, not dropped
    assert prompt.recalled_ids


async def test_recall_fills_the_budget_addressed_only_filtering_leaves() -> None:
    store = InMemoryConversationStore()
    t = garden_channel()
    await t.store_in(store)
    first = await assemble_prompt(store, t.conversation_id, "support", "Support")
    # Only the question concerns support (with the chatter just before it, as context).
    assert len(first.included_ids) == 1 + len(first.context_ids)
    assert 0.85 * 3000 < first.token_count <= 3000  # recall spends what the turns left
    assert len(first.recalled_ids) > 30
    second = await assemble_prompt(store, t.conversation_id, "support", "Support")
    assert second.messages == first.messages  # the same bytes for the same state


async def test_recall_leaves_the_budget_to_turns_that_need_it() -> None:
    store = InMemoryConversationStore()
    t = garden_channel(addressed_chatter=60)
    await t.store_in(store)
    options = AssemblerOptions(token_budget=1000, recall_share=0.25)
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", options)
    assert recall_message(prompt) is not None
    assert prompt.token_count <= 1000
    # The turns keep the three quarters recall may not claim, exactly as without recall.
    without = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                    AssemblerOptions(token_budget=750, recall=False))
    assert prompt.included_ids == without.included_ids


async def test_the_search_tool_adds_only_what_the_prompt_does_not_show(
    store: ConversationStore,
) -> None:
    t = garden_channel()
    await t.store_in(store)
    asked = t.turns[-1]
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                   AssemblerOptions(token_budget=800))
    assert asked.id not in prompt.recalled_ids  # the newest turn never recalls itself
    shown = set(prompt.shown_ids)
    tool = make_conversation_search_tool(store, t.conversation_id,
                                         exclude_ids=(asked.id, *prompt.shown_ids))
    windows = await tool.search("which roses did Carol plant in the garden?", 5)
    returned = {m.id for w in windows for m in w.messages}
    assert len([h for w in windows for h in w.hit_ids]) == 5  # five new hits, not fewer
    assert not returned & shown
    assert asked.id not in returned


async def test_recall_and_search_work_the_same_on_sqlite(sqlite_url: str) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        t = garden_channel()
        await t.store_in(store)
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support")
        assert 0.85 * 3000 < prompt.token_count <= 3000
        assert t.turns[-1].id not in prompt.recalled_ids
