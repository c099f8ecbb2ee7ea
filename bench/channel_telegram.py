"""Telegram channel throughput and latency, end to end against the fake Bot API server.

Each event is a group message mentioning the bot: update in (long poll or webhook) -> the
channel normalizes it -> the inbound turn is stored -> the reply is posted (sendMessage to the
fake) -> the reply turn is stored. Store: SqlConversationStore on a fresh SQLite file. The
channel runs with throttle=False: with Telegram's flood limits on (the default), PTB holds
replies to 30/s overall and 20/min per group, which would be what this measured.

    .venv/bin/python bench/channel_telegram.py [--events 500] [--chats 50]

Prints, per mode: events/s for a burst of all events at once (spread over `--chats` groups),
and latency percentiles for one event at a time: intake (update handed to the fake -> the
channel calls on_message), reply (send_reply, one sendMessage round trip) and end to end
(-> reply posted and both turns stored). Intake plus reply is the channel's share; the rest
is the two store appends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentile  # noqa: E402

from tests.fakes.telegram import ALICE, FakeTelegram, TgChat, unused_port  # noqa: E402
from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.channels.base import Channel  # noqa: E402
from threadline.channels.telegram import TelegramChannel  # noqa: E402
from threadline.channels.telegram.inbound import turn_id  # noqa: E402
from threadline.history import StoredMessage  # noqa: E402
from threadline.history.model import MessageMetadata, Participant  # noqa: E402


class BenchEvents:
    """Stores the inbound turn, replies at once, stores the reply; timestamps each step."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store
        self.taken_in: dict[str, float] = {}
        self.reply_seconds: dict[str, float] = {}
        self.done: dict[str, asyncio.Future[float]] = {}

    def expect(self, text: str) -> asyncio.Future[float]:
        self.done[text] = asyncio.get_running_loop().create_future()
        return self.done[text]

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.taken_in[message.content] = time.perf_counter()
        await self.store.append(message)
        sending = time.perf_counter()
        [reply_id] = await channel.send_reply(message, f"ack {message.content}")
        self.reply_seconds[message.content] = time.perf_counter() - sending
        assert channel.identity is not None and message.metadata.channel_id is not None
        await self.store.append(StoredMessage(
            conversation_id=message.conversation_id,
            participant=Participant(kind="agent", id=channel.identity.user_id),
            content=f"ack {message.content}",
            id=turn_id(message.metadata.channel_id, reply_id),
            scope=message.scope,
            metadata=MessageMetadata(channel_type="telegram", message_id=reply_id,
                                     channel_id=message.metadata.channel_id),
        ))
        self.done[message.content].set_result(time.perf_counter())

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        raise AssertionError("the benchmark sends no edits")

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        raise AssertionError("the benchmark sends no deletions")


def channel_for(fake: FakeTelegram, mode: str) -> TelegramChannel:
    if mode == "polling":
        return TelegramChannel(name="bench", **fake.channel_settings(), throttle=False)
    port = unused_port()
    return TelegramChannel(
        name="bench", **fake.channel_settings(), throttle=False, mode="webhook",
        webhook_port=port, webhook_url=f"http://127.0.0.1:{port}/telegram",
        webhook_secret_token="bench-secret",
    )


async def measure(mode: str, *, total: int, chats: int, workdir: Path) -> dict[str, Any]:
    groups = [TgChat(-1002000000000 - n, "supergroup", title=f"Group {n}") for n in range(chats)]
    url = f"sqlite+aiosqlite:///{workdir / f'{mode}.db'}"
    async with FakeTelegram() as fake, SqlConversationStore(url) as store:
        events = BenchEvents(store)
        channel = channel_for(fake, mode)
        await channel.start(events)
        try:
            # One at a time: latency with nothing else in flight.
            intake, reply, end_to_end = [], [], []
            for n in range(total):
                text = f"@support_bot sequential {n}"
                done = events.expect(text)
                started = time.perf_counter()
                await fake.deliver(fake.message(groups[n % chats], ALICE, text))
                finished = await done
                intake.append(events.taken_in[text] - started)
                reply.append(events.reply_seconds[text])
                end_to_end.append(finished - started)

            # A burst: every event handed over at once, spread over the groups.
            texts = [f"@support_bot burst {n}" for n in range(total)]
            futures = [events.expect(text) for text in texts]
            updates = [fake.message(groups[n % chats], ALICE, t) for n, t in enumerate(texts)]
            started = time.perf_counter()
            await asyncio.gather(*(fake.deliver(update) for update in updates))
            await asyncio.gather(*futures)
            burst_seconds = time.perf_counter() - started
        finally:
            await channel.stop()
        stored = await store.count()
    assert stored == 4 * total, f"expected {4 * total} stored turns, found {stored}"
    return {
        "mode": mode,
        "burst_events_per_s": total / burst_seconds,
        "intake_p50_ms": 1000 * statistics.median(intake),
        "intake_p99_ms": 1000 * percentile(intake, 0.99),
        "reply_p50_ms": 1000 * statistics.median(reply),
        "reply_p99_ms": 1000 * percentile(reply, 0.99),
        "e2e_p50_ms": 1000 * statistics.median(end_to_end),
        "e2e_p99_ms": 1000 * percentile(end_to_end, 0.99),
        "stored_turns": stored,
    }


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--chats", type=int, default=50)
    args = parser.parse_args()
    print(f"Telegram channel, {args.events} events (one at a time, then a burst over "
          f"{args.chats} groups); SQLite store; throttle off")
    with tempfile.TemporaryDirectory() as workdir:
        for mode in ("polling", "webhook"):
            figures = await measure(mode, total=args.events, chats=args.chats,
                                    workdir=Path(workdir))
            print(f"{figures['mode']:>8}: burst {figures['burst_events_per_s']:7.1f} events/s | "
                  f"intake p50 {figures['intake_p50_ms']:5.2f} ms p99 "
                  f"{figures['intake_p99_ms']:5.2f} ms | reply p50 {figures['reply_p50_ms']:5.2f} "
                  f"ms p99 {figures['reply_p99_ms']:5.2f} ms | end to end p50 "
                  f"{figures['e2e_p50_ms']:5.2f} ms p99 {figures['e2e_p99_ms']:5.2f} ms | "
                  f"{figures['stored_turns']} turns stored")


if __name__ == "__main__":
    asyncio.run(main())
