"""How many Discord messages one process carries end to end, and the latency the channel adds.

Each message goes: the fake Discord dispatches MESSAGE_CREATE over the gateway websocket
(zstd-stream compressed, as discord.py asks) -> discord.py parses it -> the channel filters,
dedups and normalizes it -> the inbound turn is stored -> an instant reply is posted with
POST /channels/{id}/messages -> the reply turn is stored. Like Discord, the fake then sends
the bot's own post back over the gateway, which the channel drops; that work is in the figures
too. Latency is measured from the dispatch starting to the reply turn being stored. The fake
runs in the same process, so its own work (JSON, compression, serving) is in the figures.

    .venv/bin/python bench/channel_discord.py --events 500 --concurrency 32
    .venv/bin/python bench/channel_discord.py --store memory   # the channel's own share
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

from tests.fakes.discord_gateway import FakeDiscord, FakeUser  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.discord import DiscordChannel  # noqa: E402
from threadline.history import InMemoryConversationStore  # noqa: E402
from threadline.log import configure_logging  # noqa: E402


async def _round(fake: FakeDiscord, events: InstantReplies, *, rooms: list[str],
                 people: list[FakeUser], count: int, concurrency: int) -> float:
    """Deliver `count` messages, `concurrency` at a time end to end; seconds until all stored."""
    events.latencies = []
    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        async with slots:
            message = fake.message_payload(
                rooms[i % len(rooms)], author=people[i % len(people)],
                content=f"<@{fake.bot.id}> question {i}", mentions=(fake.bot,))
            finished = asyncio.get_running_loop().create_future()
            events.started[message["id"]] = (time.perf_counter(), finished)
            await fake.deliver("MESSAGE_CREATE", message)
            await finished  # a slot is one message in flight end to end, not just dispatched

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(count)))
    return time.perf_counter() - began


async def main(*, count: int, concurrency: int, store_kind: str) -> None:
    configure_logging("info")  # as `threadline run` does: no per-reply debug lines
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        opened = (SqlConversationStore(url) if store_kind == "sqlite"
                  else InMemoryConversationStore())
        async with FakeDiscord() as fake, opened as store:
            guild = fake.add_guild(name="Bench")
            rooms = [fake.add_text_channel(guild, name=f"room{i}") for i in range(50)]
            people = [fake.add_user(f"user{i}") for i in range(20)]
            for person in people:
                fake.add_member(guild, person)
            channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                     gateway_url=fake.gateway_url, guild_ready_timeout=0.05)
            events = InstantReplies(store)
            await channel.start(events)
            world = {"rooms": rooms, "people": people}
            try:
                # Warm-up: connections, discord.py caches, SQLite pages.
                await _round(fake, events, **world, count=100, concurrency=concurrency)
                elapsed = await _round(fake, events, **world, count=count,
                                       concurrency=concurrency)
                loaded = sorted(events.latencies)
                await _round(fake, events, **world, count=min(count, 200), concurrency=1)
                alone = sorted(events.latencies)
            finally:
                await channel.stop()
            stored = await store.count()

    print(f"store={store_kind} events={count} concurrency={concurrency} turns_stored={stored}")
    print_round_trips(count=count, elapsed=elapsed, loaded=loaded, alone=alone)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    arguments = parser.parse_args()
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency,
                     store_kind=arguments.store))
