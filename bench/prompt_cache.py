"""How much of each prompt Anthropic's prompt cache serves in a long, steady group chat, and the
first-text latency of the OpenAI-compatible provider beside Anthropic's.

The cache figure: a real long conversation (LoCoMo, shared/data: two people over many sessions)
is replayed turn by turn into one channel, each turn addressed to one of three agents in turn
(`ada`, `bo`, `cy`, default `AssemblerOptions`: addressed turns plus immediate context, a token
budget of 3,000, rolling summaries written by a summary model, recall on), through `Team`, the
real `AnthropicProvider` and SDK, and a SQLite store, against the fake Anthropic server applying
Anthropic's prefix-cache rules (at most 4 breakpoints, byte-identical prefix up to each, 20-block
lookback, 1,024-token minimum, entries living 5 minutes from their last use, on a simulated
clock of `--gap` seconds between turns). The agents' replies are short acknowledgements quoting
the turn; summaries quote the turns they cover. Printed: the share of the agents' input tokens
(input + cache reads + cache writes) read from the cache, over all turns and in steady chat
(after the first `--warmup` turns), and how many summaries rolled.

The latency figure: one `stream()` call per provider, a `--words`-token reply at `--rate`
tokens/s from each fake (the same pace), `--runs` times; medians of the time to the first text
handed over and to the whole reply.

    .venv/bin/python bench/prompt_cache.py [--turns 300] [--gap 30] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import locomo_conversations  # noqa: E402

from tests.fakes.anthropic import MIN_CACHEABLE_TOKENS, FakeAnthropic, Reply  # noqa: E402
from tests.fakes.anthropic import text as anthropic_text  # noqa: E402
from tests.fakes.openai import FakeOpenAI  # noqa: E402
from tests.fakes.openai import text as openai_text  # noqa: E402
from threadline.agents.agent import Agent, Memory  # noqa: E402
from threadline.agents.anthropic_provider import (  # noqa: E402
    DEFAULT_MODEL,
    DEFAULT_SUMMARY_MODEL,
    AnthropicProvider,
)
from threadline.agents.llm import ModelRequest, ModelUsage  # noqa: E402
from threadline.agents.openai_provider import OpenAIProvider  # noqa: E402
from threadline.agents.summarizer import SummarizerAgent  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history import StoredMessage  # noqa: E402
from threadline.history.assembler import AssemblerOptions  # noqa: E402
from threadline.history.model import MessageMetadata  # noqa: E402
from threadline.history.prompt import PromptMessage  # noqa: E402
from threadline.team import Team  # noqa: E402

AGENTS = ("ada", "bo", "cy")
SYSTEM_PROMPT = ("You are {name}, one of three assistants in a group chat between friends. "
                 "Answer briefly and kindly; keep track of what people tell you about their "
                 "lives, plans and families, and remind them of it when it helps.")


def _quoted(content: str, words: int) -> str:
    return " ".join(content.split()[:words])


def fake_model(body: dict[str, Any]) -> Reply:
    """A summary quoting the newest covered turns, or an agent's short acknowledgement."""
    system = body.get("system") or []
    asked = body["messages"][-1]["content"][-1].get("text", "")
    if any("running summary" in block.get("text", "") for block in system):
        return anthropic_text("Summary: " + _quoted(asked.split("New messages, oldest first:")
                                                    [-1], 120))
    return anthropic_text("Noted: " + _quoted(asked.split(":", 1)[-1], 30))


@dataclass
class CacheFigures:
    calls: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)

    def add(self, usage: ModelUsage) -> None:
        self.calls += 1
        self.usage = self.usage + usage

    @property
    def share(self) -> float:
        u = self.usage
        total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        return u.cache_read_input_tokens / total if total else 0.0

    def line(self, label: str) -> str:
        u = self.usage
        total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        return (f"{label:<22} {self.calls:>4} calls  {total:>9,} input tokens  "
                f"{u.cache_read_input_tokens:>9,} read  {u.cache_creation_input_tokens:>8,} "
                f"written  {u.input_tokens:>7,} uncached  -> {self.share:.1%} from cache")


async def cache_share(turns: int, gap: float, warmup: int, *, recall: bool = True) -> None:
    [conversation, *_] = locomo_conversations()
    replayed = conversation.turns[:turns]
    simulated = [0.0]
    async with FakeAnthropic(min_cacheable_tokens=MIN_CACHEABLE_TOKENS) as fake:
        fake.responder = fake_model
        fake.clock = lambda: simulated[0]
        with tempfile.TemporaryDirectory() as folder:
            async with SqlConversationStore(
                    f"sqlite+aiosqlite:///{Path(folder) / 'cache.db'}") as store:
                provider = AnthropicProvider(fake.client(timeout=30.0))
                summarizer = SummarizerAgent(provider, model=DEFAULT_SUMMARY_MODEL)
                agents = [Agent(name=name, system_prompt=SYSTEM_PROMPT.format(name=name),
                                model=DEFAULT_MODEL, conversation_history=store,
                                provider=provider,
                                memory=Memory(options=AssemblerOptions(recall=recall),
                                              summarizer=summarizer))
                          for name in AGENTS]
                team = Team(agents)
                everything, steady = CacheFigures(), CacheFigures()
                start = replayed[0].timestamp
                try:
                    for number, turn in enumerate(replayed):
                        simulated[0] = number * gap
                        agent = AGENTS[number % len(AGENTS)]
                        message = StoredMessage(
                            id=f"cache:{number}", conversation_id="cache:room",
                            participant=turn.participant, content=f"@{agent} {turn.content}",
                            timestamp=start + timedelta(seconds=number * gap),
                            metadata=MessageMetadata(channel_type="local",
                                                     message_id=str(number),
                                                     mentions=(agent,)))
                        for result in await team.handle(message):
                            everything.add(result.usage)
                            if number >= warmup:
                                steady.add(result.usage)
                finally:
                    await team.stop()
                    for one in agents:
                        await one.close()
                summaries = sum(1 for b in fake.bodies if b["model"] == DEFAULT_SUMMARY_MODEL)
    print(f"conversation {conversation.conversation_id}: {len(replayed)} turns replayed, "
          f"{len(AGENTS)} agents in turn, a turn every {gap:g} s, recall "
          f"{'on' if recall else 'off'}, {summaries} summaries rolled")
    print(everything.line("all turns"))
    print(steady.line(f"steady (after {warmup})"))


async def first_text(runs: int, words: int, rate: float) -> None:
    reply = " ".join(f"word{n}" for n in range(words)) + "."
    question = [PromptMessage("user", "Tell me a story.")]
    figures: dict[str, tuple[list[float], list[float]]] = {}
    async with FakeAnthropic() as anthropic, FakeOpenAI(server="openai") as openai:
        providers = {"anthropic": AnthropicProvider(anthropic.client(timeout=60.0)),
                     "openai-compatible": OpenAIProvider(openai.client(timeout=60.0))}
        for _ in range(runs):
            for name, provider in providers.items():
                if name == "anthropic":
                    anthropic.script(anthropic_text(reply, tokens_per_second=rate))
                else:
                    openai.script(openai_text(reply, tokens_per_second=rate))
                began = time.perf_counter()
                seen: list[float] = []

                async def on_text(so_far: str, seen: list[float] = seen) -> None:
                    if not seen:
                        seen.append(time.perf_counter())

                await provider.stream(ModelRequest(model=DEFAULT_MODEL, system="",
                                                   messages=question, thinking="off"),
                                      on_text=on_text)
                whole = time.perf_counter() - began
                first, total = figures.setdefault(name, ([], []))
                first.append(seen[0] - began)
                total.append(whole)
    print(f"first text, {words}-token reply at {rate:g} tokens/s, median of {runs}:")
    for name, (first_times, totals) in figures.items():
        print(f"  {name:<18} first text {statistics.median(first_times):.3f} s   "
              f"whole reply {statistics.median(totals):.3f} s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--gap", type=float, default=30.0)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    await cache_share(args.turns, args.gap, args.warmup)
    await cache_share(args.turns, args.gap, args.warmup, recall=False)  # what recall costs
    await first_text(args.runs, args.words, args.rate)


if __name__ == "__main__":
    asyncio.run(main())
