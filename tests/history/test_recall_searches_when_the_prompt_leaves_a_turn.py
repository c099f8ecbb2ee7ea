"""Recall searches only when the prompt leaves it a turn to show, on a store that reads on the
event loop (the history is read first there); what it shows is the same on every store.

A short conversation whose every turn is in the prompt has nothing to recall; one whose
budget or addressed-only filter leaves a turn out is searched, as before (and one a summary
covers: tests/history/test_assembler_summaries.py). There the history itself is read after
the summary, from the first turn it does not cover.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import opened_store
from tests.history.test_assembler_summaries import CountingSummarizer
from tests.history.transcripts import ANN, BILLING, BOB, SUPPORT, Transcript
from threadline.backends.sql import SqlConversationStore
from threadline.history import InMemoryConversationStore
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.model import StoredMessage
from threadline.history.prompt import AssembledPrompt
from threadline.history.store import SearchWindow

STORES = ["memory", "sqlite", "postgresql"]
QUESTION = "@support what happened to parcel 7781 again?"


class SearchCounting:
    """Put before a real store's class: counts the searches recall makes through it."""

    searches = 0

    async def search_context(self, *args: Any, **kwargs: Any) -> list[SearchWindow]:
        self.searches += 1
        return await super().search_context(*args, **kwargs)  # type: ignore[misc]


class SearchCountingMemory(SearchCounting, InMemoryConversationStore):
    """The memory store, counting recall's searches."""


class SearchCountingSql(SearchCounting, SqlConversationStore):
    """The SQL store, counting recall's searches."""


def parcel_chat(filler: int, *, to: tuple[str, ...] = ("support",)) -> Transcript:
    """The parcel's news, `filler` turns of other talk, then the question about it."""
    t = Transcript()
    t.say(BOB, f"@{to[0]} parcel 7781 came back crushed, the courier left it in the rain",
          mentions=to)
    for i in range(filler):
        t.say(ANN, f"@support and question {i} about my invoice and its delivery schedule",
              mentions=("support",))
        t.say(SUPPORT, f"Answer {i}: the invoice is fine and delivery is on schedule.")
    t.say(ANN, QUESTION, mentions=("support",))
    return t


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_short_conversation_all_in_the_prompt_is_not_searched(
        kind: str, tmp_path: Path) -> None:
    store = (SearchCountingMemory() if kind == "memory"
             else SearchCountingSql(f"sqlite:///{tmp_path / 't.db'}"))
    async with store:
        t = parcel_chat(4)
        await t.store_in(store)
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support")
        assert prompt.included_ids == [m.id for m in t.turns]
        assert prompt.recalled_ids == []
        assert store.searches == 0

        # The same conversation with a budget that leaves its first turn out: searched once,
        # and that turn recalled.
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support",
                                       AssemblerOptions(token_budget=150))
        assert t.turns[0].id in prompt.dropped_for_budget_ids
        assert t.turns[0].id in prompt.recalled_ids
        assert store.searches == 1


async def assembled(kind: str, tmp_path: Path, t: Transcript,
                    options: AssemblerOptions) -> AssembledPrompt:
    async with opened_store(kind, tmp_path) as store:
        await t.store_in(store)
        prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", options)
    assert prompt.token_count <= options.token_budget
    return prompt


async def recalled(kind: str, tmp_path: Path, t: Transcript,
                   options: AssemblerOptions) -> Collection[str]:
    return (await assembled(kind, tmp_path, t, options)).recalled_ids


@pytest.mark.parametrize("kind", STORES)
async def test_a_short_conversation_that_fits_is_shown_whole_on_every_store(
        kind: str, tmp_path: Path) -> None:
    # The whole conversation takes 259 tokens. Recall's windows (of turns the prompt has
    # anyway) used to claim their share of the budget first and push the first turns out,
    # into a recall block of three of them: 174 tokens shown of the 300.
    t = parcel_chat(6)
    prompt = await assembled(kind, tmp_path, t, AssemblerOptions(token_budget=300))
    assert prompt.included_ids == [m.id for m in t.turns]
    assert prompt.recalled_ids == []


@pytest.mark.parametrize("kind", STORES)
async def test_a_turn_the_budget_leaves_out_of_a_short_conversation_is_recalled(
        kind: str, tmp_path: Path) -> None:
    t = parcel_chat(12)
    assert t.turns[0].id in await recalled(kind, tmp_path, t, AssemblerOptions(token_budget=400))


@pytest.mark.parametrize("kind", STORES)
async def test_a_turn_filtered_out_of_a_short_conversation_is_recalled(
        kind: str, tmp_path: Path) -> None:
    # Said to another agent, well before the question: addressed-only filtering drops it.
    t = parcel_chat(6, to=("billing",))
    t.say(BILLING, "Billing here: I can refund the parcel once the courier confirms.")
    t.turns.append(t.turns.pop(-2))  # the question stays the newest turn
    assert t.turns[-1].content == QUESTION
    assert t.turns[0].id in await recalled(kind, tmp_path, t, AssemblerOptions())



class ReadCountingMemory(InMemoryConversationStore):
    """The memory store, counting the turns each read of the history returns."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []

    async def get(self, conversation_id: str, **kwargs: Any) -> list[StoredMessage]:
        turns = await super().get(conversation_id, **kwargs)
        if kwargs.get("limit", 1) > 1:
            self.read.append(len(turns))
        return turns


async def test_on_a_store_that_reads_on_the_loop_turns_a_summary_covers_are_not_read() -> None:
    store = ReadCountingMemory()
    t = parcel_chat(15)
    await t.store_in(store)
    options = AssemblerOptions(rolling_summary_threshold=10)
    first = await assemble_prompt(store, t.conversation_id, "support", "Support", options,
                                  CountingSummarizer())
    assert first.summary_created
    store.read = []
    second = await assemble_prompt(store, t.conversation_id, "support", "Support", options,
                                   CountingSummarizer())
    assert second.summary_used and not second.summary_created
    # The turns after the summary, not the conversation's 32.
    assert store.read == [len(first.included_ids)]
