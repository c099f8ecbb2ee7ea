"""Retention deletes reply records older than its days, and nothing else: newer records and
every turn of the history stay (memory, SQLite and PostgreSQL alike)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from threadline.backends.parts import records_for
from threadline.history.model import Participant, StoredMessage, utc_now
from threadline.history.store import ConversationStore
from threadline.inspector import ReplyRecord
from threadline.inspector.retention import RecordRetention, prune_records


@dataclass(frozen=True)
class Finished:
    """A turn already finished, as the recorder queues it."""

    record: ReplyRecord

    def to_record(self) -> ReplyRecord:
        return self.record


def record(number: int, *, age_days: float) -> ReplyRecord:
    return ReplyRecord(
        id=f"record-{number:04d}", conversation_id="local:room", agent="support",
        inbound_id=f"turn-{number}", outbound_id=None,
        created_at=utc_now() - timedelta(days=age_days), addressed_because="mention",
        model="offline", stop_reason="end_turn", latency_ms=1.5, model_calls=1,
        input_tokens=10, output_tokens=5, cache_read_tokens=0, cache_write_tokens=0,
        prompt_tokens=10, token_budget=3000, reply=f"reply {number}", detail={"n": number})


async def test_prune_keeps_new_records_and_the_whole_history(store: ConversationStore) -> None:
    old_turn = StoredMessage(conversation_id="local:room", content="said long ago",
                             participant=Participant(kind="user", id="ada"),
                             timestamp=utc_now() - timedelta(days=90))
    await store.append(old_turn)
    records = records_for(store)
    ages = {1: 40.0, 2: 31.0, 3: 29.0, 4: 0.0}
    assert await records.add([Finished(record(n, age_days=a)) for n, a in ages.items()]) == 4

    assert await prune_records(records, 30) == 2
    kept = await records.recent(limit=10)
    assert [r.id for r in kept] == ["record-0004", "record-0003"]
    whole = await records.get("record-0003")
    assert whole is not None and whole.detail == {"n": 3}
    assert await store.count("local:room") == 1  # the history is not the records' to prune
    assert await prune_records(records, 30) == 0


async def test_retention_prunes_in_the_background(store: ConversationStore) -> None:
    records = records_for(store)
    await records.add([Finished(record(1, age_days=3)), Finished(record(2, age_days=0.5))])
    retention = RecordRetention(records, 1, every=0.01)
    retention.start()
    try:
        async with asyncio.timeout(10):
            await retention.pass_done.wait()
        assert [r.id for r in await records.recent()] == ["record-0002"]
        await records.add([Finished(record(3, age_days=2))])  # arrives late, already old
        retention.pass_done.clear()
        async with asyncio.timeout(10):
            await retention.pass_done.wait()
    finally:
        await retention.stop()
    assert retention.passes >= 2
    assert [r.id for r in await records.recent()] == ["record-0002"]
