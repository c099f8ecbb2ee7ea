"""Grow a benchmark store to a given number of rows with filler conversations, showing progress."""

from __future__ import annotations

import random
import sys
import time

from dataset import HUMANS, SMALL_TALK

from threadline.history import Participant, StoredMessage
from threadline.history.store import ConversationStore

BATCH = 5000


async def fill_to(store: ConversationStore, rows: int, *, conversations: int = 1000,
                  seed: int = 11) -> None:
    """Append small-talk turns spread over `conversations` filler channels until `rows`."""
    done = await store.count()
    if done >= rows:
        return
    rng = random.Random(seed + done)
    people = [Participant(kind="user", id=f"U{n}", display_name=n) for n in HUMANS]
    started = time.perf_counter()
    while done < rows:
        size = min(BATCH, rows - done)
        await store.append_many([
            StoredMessage(conversation_id=f"filler:{(done + i) % conversations}",
                          participant=rng.choice(people),
                          content=" ".join(rng.sample(SMALL_TALK, 2)))
            for i in range(size)
        ])
        done += size
        if done % 100_000 < BATCH or done >= rows:
            rate = done / max(time.perf_counter() - started, 1e-9)
            print(f"  filling: {done:,}/{rows:,} rows ({rate:,.0f} rows/s)", file=sys.stderr)
