"""How long the `http` platform takes from a signed webhook to the reply at the callback,
beside Slack's HTTP mode measured in the same run.

Each message goes: the fake caller signs and POSTs it -> the channel verifies the HMAC and the
timestamp, reads the body -> the inbound turn is stored -> an instant reply is kept in the
outbox (SQLite) -> the callback sender claims it, signs it and POSTs it to the fake caller's
callback -> the reply turn is stored. Two figures: to the reply turn stored (what every
channel benchmark here measures, so comparable with Slack's), and to the callback holding the
reply (what a caller waits). Slack: the fake signs and POSTs an event -> bolt verifies and acks
-> stored -> chat.postMessage to the fake -> stored. Both fakes run in this process. Rounds
alternate http and slack three times; the figures are over all rounds.

    .venv/bin/python bench/channel_http.py --events 300 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import percentile  # noqa: E402
from instant import InstantReplies  # noqa: E402

from tests.fakes.http_caller import FakeCaller  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.http_replies import SqlReplyOutbox  # noqa: E402
from threadline.channels.http.callback import CallbackPolicy  # noqa: E402
from threadline.channels.http.channel import HttpChannel  # noqa: E402
from threadline.channels.slack import SlackChannel  # noqa: E402

SECRET = "bench-secret-of-at-least-24-characters"


async def _http_round(caller: FakeCaller, channel: HttpChannel, events: InstantReplies, *,
                      count: int, concurrency: int, tag: str) -> list[float]:
    """Latencies to the callback (seconds); `events.latencies` gets those to stored."""
    slots = asyncio.Semaphore(concurrency)
    to_callback: list[float] = []

    async def deliver(i: int) -> None:
        async with slots:
            message_id = f"{tag}-{i}"
            finished = asyncio.get_running_loop().create_future()
            began = time.perf_counter()
            events.started[message_id] = (began, finished)
            status, _ = await caller.send(channel.url, conversation_id=f"c{i % 50}",
                                          message_id=message_id, text=f"question {i}",
                                          speaker=f"u{i % 20}")
            assert status == 202, status
            await caller.reply_to(message_id)
            to_callback.append(time.perf_counter() - began)
            await finished

    await asyncio.gather(*(deliver(i) for i in range(count)))
    return to_callback


async def _slack_round(fake: FakeSlack, channel: SlackChannel, events: InstantReplies, *,
                       count: int, concurrency: int) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def deliver(i: int) -> None:
        async with slots:
            event = fake.message_event(f"<@U0BOT> question {i}", user=f"U{i % 20:04d}",
                                       channel=f"C{i % 50:04d}")
            finished = asyncio.get_running_loop().create_future()
            events.started[event["ts"]] = (time.perf_counter(), finished)
            await fake.deliver_event(channel.events_url, event)
            await finished

    await asyncio.gather(*(deliver(i) for i in range(count)))


def _ms(values: list[float], share: float) -> float:
    return percentile(sorted(values), share) * 1000


async def main(*, count: int, concurrency: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with FakeCaller(SECRET) as caller, FakeSlack() as fake, \
                SqlConversationStore(f"sqlite+aiosqlite:///{folder}/http.db") as http_store, \
                SqlConversationStore(f"sqlite+aiosqlite:///{folder}/slack.db") as slack_store:
            for i in range(20):
                fake.add_user(f"U{i:04d}", display_name=f"user{i}")
            for i in range(50):
                fake.add_channel(f"C{i:04d}", name=f"room{i}")
            http = HttpChannel(name="api", secret=SECRET, outbox=SqlReplyOutbox(http_store),
                               callback=CallbackPolicy(url=caller.callback_url, secret=SECRET))
            slack = SlackChannel(**fake.channel_settings(mode="http"))
            http_events, slack_events = InstantReplies(http_store), InstantReplies(slack_store)
            await http.start(http_events)
            await slack.start(slack_events)
            stored: dict[str, list[float]] = {"http": [], "slack": []}
            to_callback: list[float] = []
            try:  # warm-up: connections, caches, SQLite pages
                await _http_round(caller, http, http_events, count=50,
                                  concurrency=concurrency, tag="warm")
                await _slack_round(fake, slack, slack_events, count=50,
                                   concurrency=concurrency)
                for n in range(rounds):
                    http_events.latencies = []
                    to_callback += await _http_round(caller, http, http_events, count=count,
                                                     concurrency=concurrency, tag=f"r{n}")
                    stored["http"] += http_events.latencies
                    slack_events.latencies = []
                    await _slack_round(fake, slack, slack_events, count=count,
                                       concurrency=concurrency)
                    stored["slack"] += slack_events.latencies
            finally:
                await http.stop()
                await slack.stop()
    print(f"events={count} x {rounds} rounds each, concurrency={concurrency}, SQLite, "
          "instant replies")
    for name, values in stored.items():
        print(f"{name:5} webhook -> reply stored:   p50 {_ms(values, 0.5):6.1f} ms, "
              f"p99 {_ms(values, 0.99):6.1f} ms")
    print(f"http  webhook -> at the callback: p50 {_ms(to_callback, 0.5):6.1f} ms, "
          f"p99 {_ms(to_callback, 0.99):6.1f} ms")
    # Slack's reply is posted within its turn; http's is posted from the outbox after it:
    # the like for like is the callback holding it against Slack's reply stored.
    for share in (0.5, 0.99):
        ratio = _ms(to_callback, share) / _ms(stored["slack"], share)
        print(f"http at the callback / slack reply stored, p{share * 100:.0f}: {ratio:.2f}x")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    asyncio.run(main(count=arguments.events, concurrency=arguments.concurrency,
                     rounds=arguments.rounds))
