"""Discord messages per second through 1, 2 and 3 `threadline run` replicas sharing 4 shards,
and how long the others take to take over the shards of a replica killed with `kill -9`.

Each replica is a real process on one PostgreSQL database, connected to the fake Discord (in
this process, on loopback) with one gateway session per shard it holds, answering with the
offline model. A message goes: the fake dispatches MESSAGE_CREATE on its shard's session ->
the replica holding it stores the turn, answers, posts the reply -> the fake records the post.
The rate is messages delivered, `--concurrency` at a time, over the seconds until every reply
was posted. The fake's own work (JSON, zlib, serving every replica) is in the figures, and on a
2-core machine three replicas and the fake share the cores: read the figures as what sharding
costs and spreads here, not as a ceiling.

    THREADLINE_TEST_PG_URL=postgresql+asyncpg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python bench/discord_shards.py --messages 400 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import drop_pg_schema, fresh_pg_schema  # noqa: E402
from tests.fakes.discord_gateway import FakeDiscord, FakeUser  # noqa: E402
from tests.runtime.discord_replicas import Replica, settle, start_replica  # noqa: E402

SHARDS = 4
LEASE_SECONDS = 3.0
SPREADS = {1: [4], 2: [2, 2], 3: [1, 1, 2]}


def world(discord: FakeDiscord, rooms_per_shard: int) -> list[tuple[str, FakeUser]]:
    """Servers on every shard, each with rooms and one person per room: (room, person)."""
    rooms = []
    for shard in range(SHARDS):
        guild = discord.add_guild(name=f"server {shard}", shard=(shard, SHARDS))
        for n in range(rooms_per_shard):
            person = discord.add_user(f"person{shard}-{n}")
            discord.add_member(guild, person)
            rooms.append((discord.add_text_channel(guild, name=f"room{n}"), person))
    return rooms


async def throughput(discord: FakeDiscord, rooms: list[tuple[str, FakeUser]], *,
                     messages: int, concurrency: int) -> float:
    """Messages per second, each slot one message in flight until its reply is posted."""
    replied: set[str] = set()
    seen = 0

    def is_answered(message_id: str) -> bool:
        nonlocal seen
        for post in discord.posts[seen:]:
            replied.add(str(post.get("message_reference", {}).get("message_id")))
        seen = len(discord.posts)
        return message_id in replied

    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        room, person = rooms[i % len(rooms)]
        async with slots:
            sent = await discord.deliver_message(
                room, author=person, content=f"<@{discord.bot.id}> question {i}",
                mentions=(discord.bot,))
            while not is_answered(str(sent["id"])):
                await discord.wait_until(lambda: is_answered(str(sent["id"])))

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(messages)))
    return messages / (time.perf_counter() - began)


async def run(pg_url: str, *, messages: int, concurrency: int) -> None:
    print(f"{SHARDS} shards, {messages} messages, {concurrency} in flight, offline model, "
          f"PostgreSQL; lease {LEASE_SECONDS:g} s")
    for count in (0, 1, 2, 3):  # 0: one replica with one unsharded connection
        store_url = await fresh_pg_schema(pg_url)
        replicas: list[Replica] = []
        try:
            with tempfile.TemporaryDirectory() as folder:
                async with FakeDiscord(recommended_shards=SHARDS) as discord:
                    rooms = world(discord, rooms_per_shard=4)
                    for n in range(max(count, 1)):
                        replicas.append(await start_replica(
                            Path(folder), f"r{n}", store_url=store_url, discord=discord,
                            shards=SHARDS if count else None, lease_seconds=LEASE_SECONDS,
                            model_url=None))
                    if count:
                        await settle(discord, replicas, shards=SHARDS, spread=SPREADS[count],
                                     within=60)
                    await throughput(discord, rooms, messages=min(40, messages),
                                     concurrency=concurrency)  # warm-up
                    rate = await throughput(discord, rooms, messages=messages,
                                            concurrency=concurrency)
                    shown = f"{count} replica(s)" if count else "1 replica, no shards"
                    print(f"  {shown:>20}: {rate:7.1f} messages/s")
                    if count == 3:
                        await takeover(discord, replicas)
                    for replica in replicas:
                        await replica.stop()
        finally:
            for replica in replicas:
                await replica.stop()
            await drop_pg_schema(store_url)


async def takeover(discord: FakeDiscord, replicas: list[Replica]) -> None:
    """Kill the replica holding two shards; seconds until every shard is connected again."""
    held = await settle(discord, replicas, shards=SHARDS, spread=SPREADS[3], within=60)
    busiest = max(set(held.values()), key=list(held.values()).count)
    [victim] = [r for r in replicas if r.name == busiest]
    victim.process.send_signal(signal.SIGKILL)
    await victim.process.wait()
    died = time.perf_counter()
    await settle(discord, replicas, shards=SHARDS, spread=[2, 2], within=60)
    print(f"  takeover after kill -9 of the replica holding 2 shards: "
          f"{time.perf_counter() - died:.2f} s (bound: about {1.2 * LEASE_SECONDS:g} s "
          "plus a gateway connect)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pg-url", default=os.environ.get("THREADLINE_TEST_PG_URL"))
    args = parser.parse_args()
    if not args.pg_url:
        parser.error("several replicas need PostgreSQL: pass --pg-url or set "
                     "THREADLINE_TEST_PG_URL")
    asyncio.run(run(args.pg_url, messages=args.messages, concurrency=args.concurrency))


if __name__ == "__main__":
    main()
