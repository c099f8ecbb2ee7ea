"""Summaries: the model summarizer's prompt on the wire and failures; extractive facts kept."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta, timezone

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply, error, fake_anthropic_fixture, text
from tests.history.helpers import ANN, BOB, SUPPORT, turn
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.summarizer import ExtractiveSummarizer, SummarizerAgent
from threadline.errors import ModelError
from threadline.history.model import (
    MessageMetadata,
    Participant,
    ToolCall,
    ToolExchange,
    ToolResult,
)

fake = fake_anthropic_fixture()

OSLO = timezone(timedelta(hours=2))
TURNS = [
    turn("Hi! My order number is A-1042 and I prefer email over phone.", who=ANN, minute=0),
    turn("ok", who=BOB, minute=1),
    turn("I checked it.", who=SUPPORT, minute=2, tool_exchanges=(ToolExchange(
        ToolCall("toolu_1", "lookup_order", {"order_id": "A-1042"}),
        ToolResult("toolu_1", "shipped 2024-02-28")),)),
    turn("We decided to refund the shipping. Who sends the label?", who=BOB, minute=3),
]


async def test_the_summary_prompt_on_the_wire_keeps_facts_and_absolute_times(
    fake: FakeAnthropic,
) -> None:
    summarizer = SummarizerAgent(AnthropicProvider(fake.client()))
    fake.script(text("  Ann (order A-1042) prefers email. Shipping refund agreed; "
                     "open: who sends the label.  "))
    late = turn("Tomorrow works for me.", who=ANN, minute=5)
    late = replace(late, timestamp=late.timestamp.astimezone(OSLO))

    summary = await summarizer.summarize([*TURNS, late], "Ann is a returning customer.")

    assert summary == ("Ann (order A-1042) prefers email. Shipping refund agreed; open: who "
                       "sends the label.")
    body = fake.bodies[0]
    assert body["model"] == "claude-haiku-5-5"
    system = body["system"][0]["text"]
    for kept in ("facts people stated about themselves", "decisions", "open questions",
                 "absolute dates"):
        assert kept in system
    prompt = body["messages"][0]["content"][0]["text"]
    assert prompt.startswith("Previous summary:\nAnn is a returning customer.\n\n")
    assert "[2024-03-01 09:00 UTC] Ann: Hi! My order number is A-1042" in prompt
    assert "[2024-03-01 09:02 UTC] Support (agent): I checked it." in prompt
    assert '  (tool lookup_order {"order_id": "A-1042"} -> shipped 2024-02-28)' in prompt
    # A turn stamped in another time zone is rendered in UTC like the rest.
    assert "[2024-03-01 09:05 UTC] Ann: Tomorrow works for me." in prompt


@pytest.mark.parametrize("reply", [text("   "), Reply(content=())], ids=["blank", "no-blocks"])
async def test_an_empty_summary_is_an_error_not_a_summary(
    fake: FakeAnthropic, reply: Reply
) -> None:
    summarizer = SummarizerAgent(AnthropicProvider(fake.client()), model="claude-cheap")
    fake.script(reply)

    with pytest.raises(ModelError, match=r"'claude-cheap' returned an empty summary for 4 turns "
                                         r"of conversation 'c1'; the turns are kept"):
        await summarizer.summarize(TURNS, None)


async def test_a_summary_cut_off_by_the_token_limit_is_an_error(fake: FakeAnthropic) -> None:
    summarizer = SummarizerAgent(AnthropicProvider(fake.client()), max_tokens=50)
    fake.script(Reply(content=({"type": "text", "text": "Ann ordered A-1042 and"},),
                      stop_reason="max_tokens"))

    with pytest.raises(ModelError, match="cut off at 50 tokens"):
        await summarizer.summarize(TURNS, None)


async def test_a_provider_failure_is_raised_not_summarized(fake: FakeAnthropic) -> None:
    summarizer = SummarizerAgent(AnthropicProvider(fake.client(max_retries=0)))
    fake.script(error(529, "overloaded_error", "Overloaded"))

    with pytest.raises(ModelError, match="overloaded_error"):
        await summarizer.summarize(TURNS, None)


async def test_summary_turns_are_not_summarized_again(fake: FakeAnthropic) -> None:
    summarizer = SummarizerAgent(AnthropicProvider(fake.client()))
    old_summary = turn("Summary: Ann likes tea.", minute=0,
                       who=Participant(kind="system", id="summary:support"),
                       metadata=MessageMetadata(is_summary=True, summary_of=(1, 9)))
    await summarizer.summarize([old_summary, *TURNS], "Summary: Ann likes tea.")
    prompt = fake.bodies[0]["messages"][0]["content"][0]["text"]
    assert prompt.count("Ann likes tea") == 1


PLANTED = [
    turn("hello everyone", who=ANN, minute=0),
    turn("My name is Ann Berg and I am vegetarian.", who=ANN, minute=1),
    turn("haha ok", who=BOB, minute=2),
    turn("sounds good to me", who=BOB, minute=3),
    turn("The order number is A-1042. I prefer email.", who=ANN, minute=4),
    turn("lol yes", who=BOB, minute=5),
    turn("We agreed the refund goes out on 2024-03-08.", who=SUPPORT, minute=6),
    turn("Can someone check with Dana about the invoice?", who=BOB, minute=7),
]


async def test_the_extractive_summary_keeps_planted_facts_and_drops_small_talk() -> None:
    summary = await ExtractiveSummarizer().summarize(PLANTED, None)

    for fact in ("My name is Ann Berg and I am vegetarian.", "The order number is A-1042.",
                 "I prefer email.", "We agreed the refund goes out on 2024-03-08.",
                 "Can someone check with Dana about the invoice?"):
        assert fact in summary
    for filler in ("hello everyone", "haha ok", "sounds good", "lol yes"):
        assert filler not in summary
    assert "[2024-03-01 09:04 UTC] Ann: The order number is A-1042." in summary
    assert summary == await ExtractiveSummarizer().summarize(PLANTED, None)


async def test_the_extractive_summary_merges_the_previous_one_within_its_size() -> None:
    previous = await ExtractiveSummarizer().summarize(PLANTED[:2], None)
    merged = await ExtractiveSummarizer(max_chars=160).summarize(PLANTED[2:], previous)

    assert len(merged) <= 160
    assert "I am vegetarian" in merged  # a self-fact outranks a date or a question
    assert merged.splitlines()[0] == previous.splitlines()[0]


async def test_nothing_worth_keeping_still_says_what_was_covered() -> None:
    summary = await ExtractiveSummarizer().summarize([PLANTED[2], PLANTED[3]], None)
    assert summary == "2 turns between Bob; no facts to keep."
