"""How many Slack events one process carries end to end, and the latency the channel adds.

Each event goes: fake Slack signs and POSTs it (HTTP mode) or pushes it over the WebSocket
(socket mode) -> bolt verifies and acks -> the channel normalizes it -> the inbound turn is
stored -> an instant reply is posted with chat.postMessage to the fake -> the reply turn is
stored. Latency is measured from the delivery starting to the reply turn being stored. The
fake Slack runs in the same process, so its own work (signing, serving) is in the figures.

    .venv/bin/python bench/channel_slack.py --events 500 --concurrency 32 --mode http

`--workspaces N` installs the app by OAuth in N workspaces (events spread over them): each
event is authorized from the installation store and each reply looks its workspace's token up
again, so the figures beside `--workspaces 0` (one bot token) are what OAuth adds.
`--store postgresql` runs on the PostgreSQL of THREADLINE_TEST_PG_URL (a fresh schema).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instant import InstantReplies, print_round_trips  # noqa: E402

from tests.channels.slack.oauth_rig import oauth_channel  # noqa: E402
from tests.conftest import drop_pg_schema, fresh_pg_schema  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.slack import SlackChannel  # noqa: E402


async def _round(fake: FakeSlack, channel: SlackChannel, events: InstantReplies, *,
                 count: int, concurrency: int, mode: str, teams: list[str]) -> float:
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
                team = teams[i % len(teams)] if teams else None
                await fake.deliver_event(channel.events_url, event, team_id=team)
            else:
                await fake.send_socket_event(event)
            await finished  # a slot is one event in flight end to end, not just delivered

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(count)))
    return time.perf_counter() - began


@asynccontextmanager
async def _database(kind: str) -> AsyncIterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        return
    url = await fresh_pg_schema(os.environ["THREADLINE_TEST_PG_URL"])
    try:
        yield url
    finally:
        await drop_pg_schema(url)


async def _installed(fake: FakeSlack, store: SqlConversationStore, workspaces: int
                     ) -> tuple[SlackChannel, list[str]]:
    """A channel installed by OAuth in `workspaces` workspaces (started by the caller)."""
    teams = [f"T{i:04d}" for i in range(workspaces)]
    for team in teams:
        fake.add_team(team, name=f"team{team}", bot_user_id=f"U0B{team}", bot_id=f"B0{team}")
    return oauth_channel(fake, store), teams


async def main(*, count: int, concurrency: int, mode: str, workspaces: int,
               database: str) -> None:
    async with _database(database) as url, FakeSlack() as fake, \
            SqlConversationStore(url) as store:
        for i in range(20):
            fake.add_user(f"U{i:04d}", display_name=f"user{i}")
        for i in range(50):
            fake.add_channel(f"C{i:04d}", name=f"room{i}")
        channel, teams = (await _installed(fake, store, workspaces) if workspaces
                          else (SlackChannel(**fake.channel_settings(mode=mode)), []))
        events = InstantReplies(store)
        await channel.start(events)
        base = channel.events_url.removesuffix("/slack/events")
        fake.redirect_url = f"{base}/slack/oauth_redirect"
        for team in teams:
            await fake.install(f"{base}/slack/install", team_id=team)
        rounds = {"mode": mode, "teams": teams}
        try:
            await _round(fake, channel, events, count=100, concurrency=concurrency,
                         **rounds)  # warm-up: name caches, connections, SQLite pages
            elapsed = await _round(fake, channel, events, count=count,
                                   concurrency=concurrency, **rounds)
            loaded = sorted(events.latencies)
            await _round(fake, channel, events, count=min(count, 200), concurrency=1,
                         **rounds)
            alone = sorted(events.latencies)
        finally:
            await channel.stop()
        stored = await store.count()

    print(f"mode={mode} store={database} workspaces={workspaces or '1 (bot token)'} "
          f"events={count} concurrency={concurrency} turns_stored={stored}")
    print_round_trips(count=count, elapsed=elapsed, loaded=loaded, alone=alone)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--mode", choices=("http", "socket"), default="http")
    parser.add_argument("--workspaces", type=int, default=0,
                        help="install by OAuth in this many workspaces (0: one bot token)")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    arguments = parser.parse_args()
    if arguments.workspaces and arguments.mode != "http":
        parser.error("--workspaces needs --mode http (OAuth apps are HTTP apps)")
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency,
                     mode=arguments.mode, workspaces=arguments.workspaces,
                     database=arguments.store))
