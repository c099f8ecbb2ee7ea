"""Bursts: model calls, replies and tokens per message when people send 2-4 messages in a row.

A replay on the Telegram fake through `threadline run`'s runtime (real SDKs over loopback,
SQLite store, the fake Anthropic server): `--people` people, each in a private chat, each
sending `--bursts` bursts of two to four messages (a fixed seed), `--gap` seconds apart
within a burst and a pause between bursts, all people at once. The same replay runs with
`bursts: mode: each` (today's default: every message its own turn) and `mode: coalesce`
(one reply per burst, `--window` seconds of quiet), in one run, and prints per person-message:

- model calls and replies;
- prompt + reply tokens of the model calls (counted with the history's own token counter
  over what crossed the wire), per message answered;

and the ratio coalesce / each. The fake model answers at once; the figures are counts, not
times (coalesce makes the first reply wait `--window` seconds after the burst's last message).

    .venv/bin/python bench/bursts.py [--people 6] [--bursts 4] [--window 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.anthropic import FakeAnthropic, Reply, text  # noqa: E402
from tests.runtime.in_process import running_in_process  # noqa: E402
from tests.runtime.platforms import platform, replies_sent, say  # noqa: E402
from threadline.history.tokens import default_counter  # noqa: E402

REPLY = "Thanks, I have looked into it: here is what I found and what to do next."


@dataclass(frozen=True)
class Figures:
    messages: int
    model_calls: int
    replies: int
    tokens: int


def replay(people: int, bursts: int, seed: int) -> list[list[list[str]]]:
    """Per person, per burst, the messages (two to four in a row)."""
    chance = random.Random(seed)
    return [[[f"person {p} burst {b} message {m}: " + " ".join(
        chance.choice(("order", "late", "refund", "hello", "it's", "#4412", "please", "help"))
        for _ in range(chance.randint(3, 12))) for m in range(chance.randint(2, 4))]
        for b in range(bursts)] for p in range(people)]


def answer(body: dict[str, Any]) -> Reply:
    return text(REPLY)


def tokens_of(body: dict[str, Any]) -> int:
    """The request's prompt tokens (system and messages as sent) and the reply's."""
    counter = default_counter()
    return counter.count(json.dumps(body.get("system", ""), ensure_ascii=False)) + counter.count(
        json.dumps(body["messages"], ensure_ascii=False)) + counter.count(REPLY)


async def run_mode(mode: str, said: list[list[list[str]]], *, window: float, gap: float
                   ) -> Figures:
    more = f"bursts:\n  mode: {mode}\n  window: {window}\n"
    with tempfile.TemporaryDirectory() as folder:
        async with platform("telegram", streaming=False) as where, \
                FakeAnthropic() as anthropic:
            anthropic.responder = answer
            async with running_in_process(Path(folder), "telegram", where, anthropic.url,
                                          more_yaml=more) as runtime:
                async def person(p: int) -> None:
                    for burst in said[p]:
                        for message in burst:
                            await say("telegram", where, p, message)
                            await asyncio.sleep(gap)
                        await asyncio.sleep(window * 3)  # the person reads the answer

                await asyncio.gather(*(person(p) for p in range(len(said))))
                async with asyncio.timeout(120):
                    while await runtime.store.inbox.conversations_waiting():  # noqa: ASYNC110
                        await asyncio.sleep(0.1)
                await asyncio.sleep(window + 0.5)
            return Figures(messages=sum(len(b) for bursts in said for b in bursts),
                           model_calls=len(anthropic.requests),
                           replies=len(replies_sent("telegram", where)),
                           tokens=sum(tokens_of(r.body) for r in anthropic.requests))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--people", type=int, default=6)
    parser.add_argument("--bursts", type=int, default=4)
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between a burst's messages")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    said = replay(args.people, args.bursts, args.seed)
    figures = {mode: await run_mode(mode, said, window=args.window, gap=args.gap)
               for mode in ("each", "coalesce")}
    total = figures["each"].messages
    print(f"{args.people} people x {args.bursts} bursts of 2-4 messages = {total} messages; "
          f"window {args.window} s, {args.gap} s between a burst's messages")
    print(f"{'mode':<10}{'calls/msg':>11}{'replies/msg':>13}{'tokens/msg':>12}")
    for mode, f in figures.items():
        print(f"{mode:<10}{f.model_calls / f.messages:>11.2f}{f.replies / f.messages:>13.2f}"
              f"{f.tokens / f.messages:>12.0f}")
    each, coalesce = figures["each"], figures["coalesce"]
    print(f"coalesce / each: model calls {coalesce.model_calls / each.model_calls:.2f}, "
          f"replies {coalesce.replies / each.replies:.2f}, "
          f"tokens {coalesce.tokens / each.tokens:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
