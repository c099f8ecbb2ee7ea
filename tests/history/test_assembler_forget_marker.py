"""A forget marker is one agent's cutoff: its prompts, recall and later summaries start after
it, while another agent of the same conversation still sees every turn."""

from __future__ import annotations

from tests.history.helpers import ANN, turn
from tests.history.test_assembler_summaries import CountingSummarizer
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.store import ConversationStore
from threadline.history.summary import forget_marker, forgotten_through, latest_summary

EVERYTHING = AssemblerOptions(addressed_only_mode=False, token_budget=4000)


def shown(prompt_messages: list[object]) -> str:
    return "\n".join(str(getattr(m, "content", "")) for m in prompt_messages)


async def forget_after_order(store: ConversationStore) -> None:
    """Ann gives an order number, then asks support (only) to forget it."""
    await store.append(turn("my order 7781 never arrived", minute=0))
    await store.append(turn("the parcel was blue", minute=1))
    [asked] = await store.get("c1", limit=1)
    await store.append(forget_marker(conversation_id="c1", agent_id="support", through=asked,
                                     requested_by=ANN.display_name))
    await store.append(turn("what was my order number?", minute=2))


async def test_only_the_agent_that_forgot_loses_the_turns_and_recall(
    store: ConversationStore,
) -> None:
    await forget_after_order(store)

    support = await assemble_prompt(store, "c1", "support", "support", EVERYTHING)
    billing = await assemble_prompt(store, "c1", "billing", "billing", EVERYTHING)

    assert "7781" not in shown(support.messages) and "blue" not in shown(support.messages)
    assert support.recalled_ids == [] and not support.summary_used
    assert support.forgotten_through == 2
    assert "7781" in shown(billing.messages) and billing.forgotten_through is None


async def test_a_summary_after_forgetting_keeps_the_cutoff(store: ConversationStore) -> None:
    await forget_after_order(store)
    for minute in range(3, 9):
        await store.append(turn(f"later note {minute} about order 7781", minute=minute))
    summarizer = CountingSummarizer()
    options = AssemblerOptions(addressed_only_mode=False, token_budget=4000,
                               rolling_summary_threshold=4)

    first = await assemble_prompt(store, "c1", "support", "support", options, summarizer)
    await store.append(turn("and the order number again?", minute=9))
    second = await assemble_prompt(store, "c1", "support", "support", options, summarizer)

    [(summarized, previous)] = summarizer.calls
    assert previous is None  # the marker is no summary to build on
    assert not any("never arrived" in t or "blue" in t for t in summarized)
    assert first.summary_created and second.forgotten_through == 2
    standing = await latest_summary(store, "c1", "support")
    assert forgotten_through(standing) == 2
    assert "never arrived" not in shown(second.messages)
