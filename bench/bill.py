"""The input bill of one long real conversation, Threadline beside the OpenAI Agents SDK.

One LoCoMo conversation of the development half (shared/data: two friends over many sessions)
is replayed turn by turn, every turn addressed to one agent, a turn every `--gap` simulated
seconds, through:
- Threadline: `Agent` with default `AssemblerOptions` (a 3,000-token budget, addressed turns,
  rolling summaries, recall keeping its block), a SQLite store, the real `AnthropicProvider`;
- the OpenAI Agents SDK: `Runner` with a `SQLiteSession`, which sends the whole session every
  turn, through a thin `Model` that hands what the SDK sends to the same Anthropic SDK with
  breakpoints on the system prompt and the newest turn (the best a whole-session prompt can
  be cached).
Each side talks to its own fake Anthropic server applying Anthropic's prefix-cache rules (at
most 4 breakpoints, 20-block lookback, the 1,024-token minimum, entries living 5 minutes from
their last use). What each sends is billed by Anthropic's rules for input: uncached tokens 1x,
cache writes 1.25x, cache reads 0.1x (Threadline's summary calls included, at the same rate,
although a cheaper model writes them).

Printed at turns 50, 150 and 300: billed input token-equivalents per turn (the mean of the ten
turns up to it) and in total so far, and the share of evidence each prompt reaches: for the
conversation's questions whose answering turns are all said by then, asked as the newest turn,
the share of those turns in the prompt, and with one `conversation_search(question, 5)` call
as bench/recall.py counts it (the Agents SDK's prompt holds every turn; Threadline's is
assembled as for any turn, its recall block made fresh for the question; turns its summary
covers are left to the summary and the search tool, not recalled).

    .venv/bin/python bench/bill.py [--turns 300] [--gap 30]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import Conversation, locomo_conversations  # noqa: E402
from prompt_cache import SYSTEM_PROMPT, fake_model  # noqa: E402

from tests.fakes.anthropic import MIN_CACHEABLE_TOKENS, FakeAnthropic  # noqa: E402
from threadline.agents.agent import Agent, Memory  # noqa: E402
from threadline.agents.anthropic_provider import (  # noqa: E402
    DEFAULT_MODEL,
    DEFAULT_SUMMARY_MODEL,
    AnthropicProvider,
)
from threadline.agents.search_tool import make_conversation_search_tool  # noqa: E402
from threadline.agents.summarizer import SummarizerAgent  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history import StoredMessage  # noqa: E402
from threadline.history.assembler import assemble_prompt  # noqa: E402
from threadline.history.model import MessageMetadata  # noqa: E402
from threadline.team import Team  # noqa: E402

AGENT = "ada"
CHECKPOINTS = (50, 150, 300)
SMOOTHING = 10  # turns averaged into "per turn" at a checkpoint
WRITE, READ = 1.25, 0.1  # Anthropic's input price of a cache write and a cache read


def billed(usage: dict[str, Any]) -> float:
    """Input token-equivalents one call is billed for."""
    return (usage["input_tokens"] + WRITE * usage["cache_creation_input_tokens"]
            + READ * usage["cache_read_input_tokens"])


@dataclass
class Bill:
    """Billed input per replayed turn, and the evidence share at each checkpoint."""

    name: str
    per_turn: list[float] = field(default_factory=list)
    reach: dict[int, float] = field(default_factory=dict)
    searched: dict[int, float] = field(default_factory=dict)  # prompt + one search tool call

    def at(self, turn: int) -> tuple[float, float]:
        recent = self.per_turn[max(turn - SMOOTHING, 0):turn]
        return sum(recent) / max(len(recent), 1), sum(self.per_turn[:turn])


def metered(fake: FakeAnthropic, bill: list[float]) -> None:
    """Every call the fake answers adds its billed input to `bill[0]` (the current turn)."""
    usage_of = fake._usage

    def counting(body: dict[str, Any]) -> dict[str, Any]:
        usage = usage_of(body)
        bill[0] += billed(usage)
        return usage

    fake._usage = counting  # type: ignore[method-assign]


def answerable(conversation: Conversation, turns: int) -> list[tuple[int, list[str]]]:
    """The questions whose answering turns are all among the first `turns`, by position."""
    said = {t.id for t in conversation.turns[:turns]}
    return [(n, q.evidence_ids) for n, q in enumerate(conversation.questions)
            if set(q.evidence_ids) <= said]


def addressed(turn: StoredMessage, number: int, start: Any, gap: float) -> StoredMessage:
    return StoredMessage(
        id=f"bill:{number}", conversation_id="bill:room", participant=turn.participant,
        content=f"@{AGENT} {turn.content}", timestamp=start + timedelta(seconds=number * gap),
        metadata=MessageMetadata(channel_type="local", message_id=str(number),
                                 mentions=(AGENT,)))


async def threadline_bill(conversation: Conversation, turns: int, gap: float) -> Bill:
    bill = Bill("Threadline")
    clock, spent = [0.0], [0.0]
    replayed = conversation.turns[:turns]
    original_ids: dict[str, str] = {}
    async with FakeAnthropic(min_cacheable_tokens=MIN_CACHEABLE_TOKENS) as fake:
        fake.responder = fake_model
        fake.clock = lambda: clock[0]
        metered(fake, spent)
        with tempfile.TemporaryDirectory() as folder:
            async with SqlConversationStore(
                    f"sqlite+aiosqlite:///{Path(folder) / 'bill.db'}") as store:
                provider = AnthropicProvider(fake.client(timeout=30.0))
                agent = Agent(name=AGENT, system_prompt=SYSTEM_PROMPT.format(name=AGENT),
                              model=DEFAULT_MODEL, conversation_history=store,
                              provider=provider,
                              memory=Memory(summarizer=SummarizerAgent(
                                  provider, model=DEFAULT_SUMMARY_MODEL)))
                team = Team([agent])
                try:
                    for number, turn in enumerate(replayed):
                        clock[0], spent[0] = number * gap, 0.0
                        message = addressed(turn, number, replayed[0].timestamp, gap)
                        original_ids[message.id] = turn.id
                        await team.handle(message)
                        bill.per_turn.append(spent[0])
                        if number + 1 in CHECKPOINTS:
                            bill.reach[number + 1], bill.searched[number + 1] = await _reach(
                                store, agent, conversation, number + 1, original_ids,
                                after=message)
                finally:
                    await team.stop()
                    await agent.close()
    return bill


async def _reach(store: SqlConversationStore, agent: Agent, conversation: Conversation,
                 turns: int, original_ids: dict[str, str], *, after: StoredMessage
                 ) -> tuple[float, float]:
    """The share of answering turns a question asked now finds in Threadline's prompt, and
    with one `conversation_search` call (as bench/recall.py counts it)."""
    reached = searched = total = 0
    for position, evidence in answerable(conversation, turns):
        asked = conversation.asked(position)
        question = StoredMessage(
            id=f"bill:q{position}", conversation_id="bill:room", participant=asked.participant,
            content=asked.content.replace("@support", f"@{AGENT}"),
            timestamp=after.timestamp + timedelta(seconds=1),
            metadata=MessageMetadata(channel_type="local", message_id=f"q{position}",
                                     mentions=(AGENT,)))
        await store.append(question)
        try:
            prompt = await assemble_prompt(store, "bill:room", AGENT, AGENT,
                                           agent.assembler_options, answering=question)
            tool = make_conversation_search_tool(
                store, "bill:room", exclude_ids=(question.id, *prompt.shown_ids))
            windows = await tool.search(conversation.questions[position].text, 5)
        finally:
            await store.delete_messages("bill:room", [question.id])
        shown = {original_ids.get(i) for i in prompt.shown_ids}
        found = shown | {original_ids.get(m.id) for w in windows for m in w.messages}
        reached += sum(e in shown for e in evidence)
        searched += sum(e in found for e in evidence)
        total += len(evidence)
    return reached / max(total, 1), searched / max(total, 1)


async def agents_sdk_bill(conversation: Conversation, turns: int, gap: float) -> Bill:
    from agents import Agent as SdkAgent
    from agents import Runner, SQLiteSession, set_tracing_disabled

    bill = Bill("OpenAI Agents SDK")
    clock, spent = [0.0], [0.0]
    replayed = conversation.turns[:turns]
    set_tracing_disabled(True)
    async with FakeAnthropic(min_cacheable_tokens=MIN_CACHEABLE_TOKENS) as fake:
        fake.responder = fake_model
        fake.clock = lambda: clock[0]
        metered(fake, spent)
        model = _anthropic_model(fake.client(timeout=30.0).messages.create)
        agent = SdkAgent(name=AGENT, instructions=SYSTEM_PROMPT.format(name=AGENT), model=model)
        with tempfile.TemporaryDirectory() as folder:
            session = SQLiteSession("bill:room", Path(folder) / "sessions.db")
            try:
                for number, turn in enumerate(replayed):
                    clock[0], spent[0] = number * gap, 0.0
                    await Runner.run(agent, f"{turn.participant.display_name}: @{AGENT} "
                                     f"{turn.content}", session=session)
                    bill.per_turn.append(spent[0])
                    if number + 1 in CHECKPOINTS:
                        # The session holds every turn.
                        bill.reach[number + 1] = bill.searched[number + 1] = 1.0
            finally:
                session.close()
    return bill


def _anthropic_model(create: Callable[..., Any]) -> Any:
    """An Agents SDK `Model` sending what the SDK hands it to Anthropic's Messages API, with
    breakpoints on the system prompt and the newest turn (a whole session caches best so)."""
    from agents import Usage
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    def text_of(item: dict[str, Any]) -> str:
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content or [])

    class AnthropicModel(Model):
        async def get_response(self, system_instructions: str | None, input: Any,
                               *_: Any, **__: Any) -> ModelResponse:
            items = [{"role": "user", "content": input}] if isinstance(input, str) else input
            messages: list[dict[str, Any]] = []
            for item in items:
                role = "assistant" if item.get("role") == "assistant" else "user"
                block = {"type": "text", "text": text_of(item)}
                if messages and messages[-1]["role"] == role:
                    messages[-1]["content"].append(block)
                else:
                    messages.append({"role": role, "content": [block]})
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            reply = await create(
                model=DEFAULT_MODEL, max_tokens=1024, thinking={"type": "disabled"},
                system=[{"type": "text", "text": system_instructions or "",
                         "cache_control": {"type": "ephemeral"}}],
                messages=messages)
            text = "".join(b.text for b in reply.content if b.type == "text")
            return ModelResponse(output=[ResponseOutputMessage(
                id=reply.id, type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])])],
                usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    return AnthropicModel()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=max(CHECKPOINTS))
    parser.add_argument("--gap", type=float, default=30.0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    conversations = locomo_conversations()
    if not conversations:
        print("skipped: no LoCoMo files in shared/data/locomo-dev")
        return
    conversation = conversations[0]
    turns = min(args.turns, len(conversation.turns))
    bills = [await threadline_bill(conversation, turns, args.gap),
             await agents_sdk_bill(conversation, turns, args.gap)]
    print(f"conversation {conversation.conversation_id}: {turns} turns, each addressed to one "
          f"agent, a turn every {args.gap:g} s; billed input token-equivalents (uncached 1x, "
          f"cache writes {WRITE}x, reads {READ}x)")
    print(f"  {'':20} {'turn':>5} {'per turn':>9} {'so far':>11} {'evidence in prompt':>19} "
          f"{'+ one search':>13}")
    for checkpoint in (c for c in CHECKPOINTS if c <= turns):
        for bill in bills:
            per_turn, so_far = bill.at(checkpoint)
            print(f"  {bill.name:20} {checkpoint:>5} {per_turn:>9,.0f} {so_far:>11,.0f} "
                  f"{bill.reach[checkpoint]:>19.1%} {bill.searched[checkpoint]:>13.1%}")


if __name__ == "__main__":
    asyncio.run(main())
