"""How many Teams activities one process carries end to end, and the latency the channel adds.

Each activity goes: the fake Bot Framework signs a JWT and POSTs the activity -> the Teams SDK
validates the token (in a worker thread: see `teams.auth`) and routes it -> the channel
normalizes it -> the inbound turn is stored -> HTTP 200 -> an instant reply is posted to the
fake connector with the bot's token -> the reply turn is stored. Latency is measured from the
delivery starting to the reply turn being stored. The fake runs in the same process, so its
own work (RS256 signing, serving) is in the figures. `bench/channels.py` runs it beside Slack's.

    .venv/bin/python bench/channel_teams.py --events 500 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instant import InstantReplies, print_round_trips  # noqa: E402

from tests.fakes.teams import FakeTeams, Person  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.teams import TeamsChannel  # noqa: E402

PEOPLE = [Person(f"29:1user{n}", f"user{n}", f"00000000-0000-4000-8000-{n:012d}")
          for n in range(20)]


async def _round(fake: FakeTeams, channel: TeamsChannel, events: InstantReplies, *,
                 count: int, concurrency: int) -> float:
    """Deliver `count` activities, `concurrency` at a time end to end; seconds until stored."""
    events.latencies = []
    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        async with slots:
            person = PEOPLE[i % len(PEOPLE)]
            activity = fake.message(f"question {i}", chat=fake.personal(person), sender=person)
            finished = asyncio.get_running_loop().create_future()
            events.started[activity["id"]] = (time.perf_counter(), finished)
            await fake.deliver(channel.messaging_url, activity)
            await finished  # a slot is one activity in flight end to end, not just delivered

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(count)))
    return time.perf_counter() - began


async def main(*, count: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with FakeTeams() as fake, \
                SqlConversationStore(f"sqlite+aiosqlite:///{Path(folder) / 'b.db'}") as store:
            os.environ["REQUESTS_CA_BUNDLE"] = str(fake.ca_file)  # MSAL reaches the fake login
            channel = TeamsChannel(name="teams", port=0, streaming=False, **fake.settings())
            events = InstantReplies(store)
            await channel.start(events)
            try:
                await _round(fake, channel, events, count=100, concurrency=concurrency)
                elapsed = await _round(fake, channel, events, count=count,
                                       concurrency=concurrency)
                loaded = sorted(events.latencies)
                await _round(fake, channel, events, count=min(count, 200), concurrency=1)
                alone = sorted(events.latencies)
            finally:
                await channel.stop()
            stored = await store.count()

    print(f"store=sqlite events={count} concurrency={concurrency} turns_stored={stored}")
    print_round_trips(count=count, elapsed=elapsed, loaded=loaded, alone=alone)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    arguments = parser.parse_args()
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency))
