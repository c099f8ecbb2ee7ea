"""How many WhatsApp webhooks one process carries end to end, and the latency the channel adds.

Each message goes: the fake Cloud API signs and POSTs a webhook -> the channel checks the
signature and reads it -> the inbound turn is stored -> an instant reply is sent through
pywa's client to the fake Graph API (`POST /PHONE_NUMBER_ID/messages`) -> the reply turn is
stored -> the webhook is answered 200. Latency is measured from the POST starting to the reply
turn being stored. The fake runs in the same process, so its own work is in the figures; run
bench/channels.py for Slack's figures beside these, in the same run.

    .venv/bin/python bench/channel_whatsapp.py --events 500 --concurrency 32
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

from tests.fakes.whatsapp import Customer, FakeWhatsApp  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.whatsapp import WhatsAppChannel  # noqa: E402

CUSTOMERS = [Customer(f"3460000{i:04d}", f"customer{i}") for i in range(50)]


async def _round(fake: FakeWhatsApp, url: str, events: InstantReplies, *, count: int,
                 concurrency: int) -> float:
    """Deliver `count` webhooks, `concurrency` at a time end to end; seconds until all stored."""
    events.latencies = []
    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        async with slots:
            wamid = fake.new_wamid()
            body = fake.text_message(CUSTOMERS[i % len(CUSTOMERS)], f"question {i}",
                                     wamid=wamid)
            finished = asyncio.get_running_loop().create_future()
            events.started[wamid] = (time.perf_counter(), finished)
            status, answer = await fake.deliver(url, body)
            if status != 200:
                raise RuntimeError(f"the webhook answered {status}: {answer}")
            await finished

    began = time.perf_counter()
    await asyncio.gather(*(deliver(i) for i in range(count)))
    return time.perf_counter() - began


async def main(*, count: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        async with FakeWhatsApp() as fake, SqlConversationStore(url) as store:
            channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                                      history=store)
            events = InstantReplies(store)
            await channel.start(events)
            assert channel.webhook_url is not None
            try:
                await _round(fake, channel.webhook_url, events, count=100,
                             concurrency=concurrency)  # warm-up: connections, SQLite pages
                elapsed = await _round(fake, channel.webhook_url, events, count=count,
                                       concurrency=concurrency)
                loaded = sorted(events.latencies)
                await _round(fake, channel.webhook_url, events, count=min(count, 200),
                             concurrency=1)
                alone = sorted(events.latencies)
            finally:
                await channel.stop()
            stored = await store.count()
    print(f"whatsapp webhook store=sqlite events={count} concurrency={concurrency} "
          f"turns_stored={stored}")
    print_round_trips(count=count, elapsed=elapsed, loaded=loaded, alone=alone)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    arguments = parser.parse_args()
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency))
