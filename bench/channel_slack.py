"""How many Slack events one process carries end to end, and the latency the channel adds.

Each event goes: fake Slack signs and POSTs it (HTTP mode) or pushes it over the WebSocket
(socket mode) -> bolt verifies and acks -> the channel normalizes it -> the inbound turn is
stored -> an instant reply is posted with chat.postMessage to the fake -> the reply turn is
stored. Latency is measured from the delivery starting to the reply turn being stored. The
fake Slack runs in the same process, so its own work (signing, serving) is in the figures.

    .venv/bin/python bench/channel_slack.py --events 500 --concurrency 32 --mode http
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instant import InstantReplies, print_round_trips  # noqa: E402

from tests.fakes.slack import FakeSlack  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.slack import SlackChannel  # noqa: E402


async def _round(fake: FakeSlack, channel: SlackChannel, events: InstantReplies, *,
                 count: int, concurrency: int, mode: str) -> float:
    """Deliver `count` events, `concurrency` at a time end to end; seconds until all stored."""
    events.latencies = []
    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        async with slots:
            event = fake.message_event(f"<@U0BOT> question {i}", user=f"U{i % 20:04d}",
                                       channel=f"C{i % 50:04d}")
            finished = asyncio.get_running_loop().create_future()
            events.started[event["ts"]] = (time.perf_counter(), finished)
            if mode == "http":
                await fake.deliver_event(channel.events_url, event)
            else:
                await fake.send_socket_event(event)
            await finished  # a slot is one event in flight end to end, not just delivered

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(count)))
    return time.perf_counter() - began


async def main(*, count: int, concurrency: int, mode: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        async with FakeSlack() as fake, SqlConversationStore(url) as store:
            for i in range(20):
                fake.add_user(f"U{i:04d}", display_name=f"user{i}")
            for i in range(50):
                fake.add_channel(f"C{i:04d}", name=f"room{i}")
            channel = SlackChannel(**fake.channel_settings(mode=mode))
            events = InstantReplies(store)
            await channel.start(events)
            try:
                await _round(fake, channel, events, count=100, concurrency=concurrency,
                             mode=mode)  # warm-up: name caches, connections, SQLite pages
                elapsed = await _round(fake, channel, events, count=count,
                                       concurrency=concurrency, mode=mode)
                loaded = sorted(events.latencies)
                await _round(fake, channel, events, count=min(count, 200), concurrency=1,
                             mode=mode)
                alone = sorted(events.latencies)
            finally:
                await channel.stop()
            stored = await store.count()

    print(f"mode={mode} events={count} concurrency={concurrency} turns_stored={stored}")
    print_round_trips(count=count, elapsed=elapsed, loaded=loaded, alone=alone)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--mode", choices=("http", "socket"), default="http")
    arguments = parser.parse_args()
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency,
                     mode=arguments.mode))
