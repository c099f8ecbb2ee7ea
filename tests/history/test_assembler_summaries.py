"""Rolling summaries: one stands at a time, each turn summarized once, failures never hurt."""

from __future__ import annotations

import asyncio

from tests.history.transcripts import ANN, Transcript
from threadline.backends.sql import SqlConversationStore
from threadline.history import InMemoryConversationStore, StoredMessage
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.summary import latest_summary

OPTIONS = AssemblerOptions(rolling_summary_threshold=10, recall=False, token_budget=3000)


class CountingSummarizer:
    """Summarizes by listing turn contents; records every call's input."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []

    async def summarize(self, turns: list[StoredMessage], previous_summary: str | None) -> str:
        self.calls.append(([t.content for t in turns], previous_summary))
        seen = f"{previous_summary} | " if previous_summary else ""
        return seen + ", ".join(t.content for t in turns)


class FailingSummarizer:
    def __init__(self, error: BaseException | None = None, delay: float = 0.0) -> None:
        self.error = error
        self.delay = delay

    async def summarize(self, turns: list[StoredMessage], previous_summary: str | None) -> str:
        if self.delay:
            await asyncio.Event().wait()  # never answers; the assembler's timeout must fire
        assert self.error is not None
        raise self.error


async def add_turns(store: InMemoryConversationStore | SqlConversationStore, t: Transcript,
                    start: int, count: int) -> None:
    for i in range(start, start + count):
        await store.append(t.say(ANN, f"turn{i}", mentions=("support",)))


async def test_threshold_crossed_many_times_one_summary_each_turn_once() -> None:
    store = InMemoryConversationStore()
    t = Transcript()
    summarizer = CountingSummarizer()
    await add_turns(store, t, 0, 11)
    first = await assemble_prompt(store, t.conversation_id, "support", "Support", OPTIONS,
                                  summarizer)
    assert first.summary_created and first.summary_used
    assert summarizer.calls == [([f"turn{i}" for i in range(6)], None)]
    assert first.messages[0].role == "system" and "turn0, turn1" in first.messages[0].content
    for round_ in range(1, 6):
        await add_turns(store, t, 11 + (round_ - 1) * 6, 6)
        await assemble_prompt(store, t.conversation_id, "support", "Support", OPTIONS, summarizer)
    summarized = [c for contents, _ in summarizer.calls for c in contents]
    assert len(summarized) == len(set(summarized))  # every turn sent to the summarizer once
    assert summarizer.calls[1][1] == "turn0, turn1, turn2, turn3, turn4, turn5"  # it rolls
    standing = await latest_summary(store, t.conversation_id, "support")
    assert standing is not None and standing.metadata.summary_of is not None
    assert standing.metadata.summary_of[0] == 1  # the range grows from the first summary
    # below the threshold nothing more is summarized
    calls = len(summarizer.calls)
    await assemble_prompt(store, t.conversation_id, "support", "Support", OPTIONS, summarizer)
    assert len(summarizer.calls) == calls


async def test_failing_or_slow_summarizer_falls_back_to_the_budget() -> None:
    for summarizer in (FailingSummarizer(RuntimeError("model down")),
                       FailingSummarizer(delay=1.0)):
        store = InMemoryConversationStore()
        t = Transcript()
        await add_turns(store, t, 0, 15)
        prompt = await assemble_prompt(
            store, t.conversation_id, "support", "Support",
            AssemblerOptions(rolling_summary_threshold=10, recall=False, summary_timeout=0.05),
            summarizer)
        assert not prompt.summary_used and not prompt.summary_created
        assert len(prompt.included_ids) == 15  # no turn was replaced by a failed summary
        assert any("summarizer failed" in note for note in prompt.notes)
        assert await latest_summary(store, t.conversation_id, "support") is None


async def test_empty_summary_is_not_stored() -> None:
    class Empty:
        async def summarize(self, turns: list[StoredMessage], previous: str | None) -> str:
            return "   "

    store = InMemoryConversationStore()
    t = Transcript()
    await add_turns(store, t, 0, 12)
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", OPTIONS,
                                   Empty())
    assert not prompt.summary_used
    assert await latest_summary(store, t.conversation_id, "support") is None


async def test_two_workers_at_once_make_one_summary(sqlite_url: str) -> None:
    t = Transcript()
    summarizer = CountingSummarizer()
    async with SqlConversationStore(sqlite_url) as first, \
            SqlConversationStore(sqlite_url) as second:
        await add_turns(first, t, 0, 12)  # type: ignore[arg-type]
        await asyncio.gather(
            assemble_prompt(first, t.conversation_id, "support", "Support", OPTIONS, summarizer),
            assemble_prompt(second, t.conversation_id, "support", "Support", OPTIONS, summarizer),
        )
        summaries = [m for m in await first.get(t.conversation_id, include_summaries=True)
                     if m.metadata.is_summary]
        assert len(summaries) == 1
