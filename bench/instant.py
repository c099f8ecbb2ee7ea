"""A `ChannelEvents` for channel benchmarks: store the turn, reply at once, store the reply."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import replace

from figures import percentile

from threadline.channels.base import Channel
from threadline.history.model import Participant, StoredMessage
from threadline.history.store import ConversationStore

BENCH_AGENT = Participant(kind="agent", id="bench-agent")


class InstantReplies:
    """Stores each inbound turn, replies at once, stores the reply; times each round trip.

    A benchmark registers `started[platform message id] = (start time, future)` before it
    delivers an event; the future is resolved once both turns are stored.
    """

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.started: dict[str, tuple[float, asyncio.Future[None]]] = {}
        self.latencies: list[float] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        if not await self.store.append(message):
            return
        [posted] = await channel.send_reply(message, f"ack {message.content}")
        metadata = replace(message.metadata, message_id=posted, mentions=(),
                           reply_to_message_id=message.metadata.message_id)
        await self.store.append(StoredMessage(
            id=f"{message.id}:reply", conversation_id=message.conversation_id,
            participant=BENCH_AGENT, content="ack", scope=message.scope, metadata=metadata))
        started, finished = self.started.pop(message.metadata.message_id or "")
        self.latencies.append(time.perf_counter() - started)
        finished.set_result(None)

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        await self.store.edit_message(conversation_id, message_id, content)

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        await self.store.delete_messages(conversation_id, [message_id])


def print_round_trips(*, count: int, elapsed: float, loaded: list[float],
                      alone: list[float]) -> None:
    """The figures every channel benchmark prints, from round-trip times in seconds."""

    def ms(values: list[float], share: float) -> float:
        return percentile(values, share) * 1000

    print(f"throughput: {count / elapsed:,.0f} events/s end to end ({elapsed:.2f} s)")
    print(f"latency under load: p50 {ms(loaded, 0.5):.1f} ms, p99 {ms(loaded, 0.99):.1f} ms")
    print(f"latency one at a time: p50 {ms(alone, 0.5):.1f} ms, p99 {ms(alone, 0.99):.1f} ms,"
          f" mean {statistics.fmean(alone) * 1000:.1f} ms")
