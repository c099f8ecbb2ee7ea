"""How fast the prompt assembler is, and how many tokens it sends against the whole history.

Prints p50/p99 of `assemble_prompt` on SQLite (and PostgreSQL when THREADLINE_TEST_PG_URL is
set) for conversations of 100, 1,000 and 10,000 turns in a store holding 1,000,000 messages,
with addressed-only filtering on and off, without a summary and with a stored one; then the
tokens sent per turn over a 500-turn multi-agent conversation against sending everything.

    .venv/bin/python bench/assembler.py [--rows 1000000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import AGENTS, HUMANS, SMALL_TALK  # noqa: E402
from figures import percentile  # noqa: E402
from fill import fill_to  # noqa: E402

from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.history import (  # noqa: E402
    MessageMetadata,
    Participant,
    StoredMessage,
)
from threadline.history.assembler import AssemblerOptions, assemble_prompt  # noqa: E402
from threadline.history.model import utc_now  # noqa: E402
from threadline.history.store import ConversationStore  # noqa: E402
from threadline.history.summary import summary_participant_id  # noqa: E402
from threadline.log import configure_logging  # noqa: E402

SIZES = (100, 1_000, 10_000)
CACHE = Path(tempfile.gettempdir()) / "threadline-bench"


def channel_turns(conversation_id: str, count: int, seed: int) -> list[StoredMessage]:
    """A busy channel: four humans and three agents; about one turn in six addresses support."""
    rng = random.Random(seed)
    humans = [Participant(kind="user", id=f"U{n}", display_name=n) for n in HUMANS[:4]]
    agents = [Participant(kind="agent", id=a, display_name=a.capitalize()) for a in AGENTS]
    start = utc_now() - timedelta(days=30)
    turns = []
    for i in range(count):
        speaker = rng.choice(agents) if rng.random() < 0.2 else rng.choice(humans)
        mentions = (rng.choice(AGENTS),) if rng.random() < 0.5 else ()
        text = " ".join(rng.sample(SMALL_TALK, 2))
        if mentions:
            text = f"@{mentions[0]} {text}"
        turns.append(StoredMessage(
            id=f"{conversation_id}:{i}", conversation_id=conversation_id, participant=speaker,
            content=text, timestamp=start + timedelta(seconds=i * 30),
            metadata=MessageMetadata(channel_type="slack", message_id=str(i), mentions=mentions),
        ))
    return turns


def stored_summary(conversation_id: str, last_sequence: int) -> StoredMessage:
    return StoredMessage(
        id=f"summary:support:{conversation_id}:1-{last_sequence}",
        conversation_id=conversation_id,
        participant=Participant(kind="system", id=summary_participant_id("support"),
                                display_name="Summary"),
        content="Ann reported order 4412 missing; Bob prefers email; the refund was approved. " * 4,
        metadata=MessageMetadata(is_summary=True, summary_of=(1, last_sequence)),
    )


async def prepare(store: ConversationStore, rows: int) -> None:
    for size in SIZES:
        cid = f"bench:assembler:{size}"
        if await store.count(cid) < size:
            turns = channel_turns(cid, size, seed=size)
            for start in range(0, size, 5000):
                await store.append_many(turns[start:start + 5000])
        summary_cid = f"bench:assembler:{size}:summarized"
        if await store.count(summary_cid) < size:
            turns = channel_turns(summary_cid, size, seed=size)
            for start in range(0, size, 5000):
                await store.append_many(turns[start:start + 5000])
            await store.append(stored_summary(summary_cid, size - 60))
    await fill_to(store, rows)


async def time_assembly(store: ConversationStore, label: str, repeat: int) -> None:
    print(f"{label}: assemble_prompt latency (ms), budget 3,000 tokens")
    print(f"  {'turns':>7} {'addressed-only':>15} {'summary':>8} {'p50':>7} {'p99':>7}")
    for size in SIZES:
        for summarized in (False, True):
            cid = f"bench:assembler:{size}" + (":summarized" if summarized else "")
            for addressed in (True, False):
                options = AssemblerOptions(addressed_only_mode=addressed)
                await assemble_prompt(store, cid, "support", "Support", options)  # warm up
                timings = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    await assemble_prompt(store, cid, "support", "Support", options)
                    timings.append((time.perf_counter() - started) * 1000)
                print(f"  {size:>7,} {'on' if addressed else 'off':>15} "
                      f"{'yes' if summarized else 'no':>8} {percentile(timings, 0.5):7.2f} "
                      f"{percentile(timings, 0.99):7.2f}")


async def tokens_per_turn(path: Path) -> None:
    """Replay a 500-turn channel, assembling for each addressed turn as the agent would."""
    turns = channel_turns("bench:tokens", 500, seed=3)
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        sent = whole = answered = 0
        for turn in turns:
            await store.append(turn)
            whole += sum(m.token_count or 0 for m in await store.get(turn.conversation_id))
            if turn.participant.kind == "user" and turn.metadata.mentions:
                agent = turn.metadata.mentions[0]
                prompt = await assemble_prompt(store, turn.conversation_id, agent,
                                               agent.capitalize())
                sent += prompt.token_count
                answered += 1
        # `whole` counts every turn; compare per answered turn on both sides.
        whole_per_answer = whole / len(turns)
        print(f"tokens per answered turn over a 500-turn channel, 3 agents, 4 humans "
              f"({answered} answers): assembled {sent / answered:,.0f}, whole history "
              f"{whole_per_answer:,.0f} on average, ratio {sent / answered / whole_per_answer:.2f}")


async def main() -> None:
    configure_logging("warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    targets = [("SQLite", f"sqlite+aiosqlite:///{CACHE / f'assembler-{args.rows}.db'}")]
    pg = os.environ.get("THREADLINE_TEST_PG_URL")
    if pg:
        targets.append(("PostgreSQL", f"{pg}{'&' if '?' in pg else '?'}search_path=public"))
    else:
        print("PostgreSQL: skipped (set THREADLINE_TEST_PG_URL to include it)")
    for label, url in targets:
        async with SqlConversationStore(url) as store:
            await prepare(store, args.rows)
            print(f"{label}: {await store.count():,} rows in the store")
            await time_assembly(store, label, args.repeat)
    with tempfile.TemporaryDirectory() as folder:
        await tokens_per_turn(Path(folder) / "tokens.db")


if __name__ == "__main__":
    asyncio.run(main())
