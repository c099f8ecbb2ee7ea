"""The `http` outbox, on every store: a reply is kept once, claimed by one poster at a time,
waits after a failure, and is read back by cursor in order.

Two posters (replicas) claiming the same channel's replies at once never both get one; a
claim that ends without a delivery (the poster died) lets the reply be claimed again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.http_replies import SqlReplyOutbox
from threadline.channels.http.outbox import HttpReply, MemoryReplyOutbox, ReplyOutbox

SECOND = 1_000_000


def reply(n: int, *, channel: str = "api") -> HttpReply:
    return HttpReply(reply_id=f"r{n}", channel=channel, conversation_id=f"c{n % 3}",
                     in_reply_to=f"m{n}", turn_id=f"http:{channel}:c{n % 3}:m{n}",
                     agent="support", text=f"answer {n}", created_us=n)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def outboxes(request: pytest.FixtureRequest,
                   tmp_path: Path) -> AsyncIterator[tuple[ReplyOutbox, ReplyOutbox]]:
    """Two outboxes on one store, as two replicas have (the memory one: the same object)."""
    if request.param == "memory":
        memory = MemoryReplyOutbox()
        yield memory, memory
        return
    url = (f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}" if request.param == "sqlite"
           else await fresh_pg_schema(pg_url_or_skip()))
    try:
        async with SqlConversationStore(url) as one, SqlConversationStore(url) as two:
            yield SqlReplyOutbox(one), SqlReplyOutbox(two)
    finally:
        if request.param == "postgresql":
            await drop_pg_schema(url)


async def test_a_reply_is_kept_once_and_read_by_cursor(
        outboxes: tuple[ReplyOutbox, ReplyOutbox]) -> None:
    outbox, _ = outboxes
    kept = [await outbox.keep(reply(n)) for n in range(5)]
    again = await outbox.keep(replace(reply(2), text="a second copy"))
    assert again == kept[2] and again.text == "answer 2"
    await outbox.keep(reply(9, channel="other"))
    cursors = [r.cursor for r in kept]
    assert cursors == sorted(cursors) and len(set(cursors)) == 5
    assert [r.reply_id for r in await outbox.after("api", cursor=0, limit=10)] == [
        f"r{n}" for n in range(5)]
    assert [r.reply_id for r in await outbox.after("api", cursor=cursors[1], limit=2)] == [
        "r2", "r3"]
    assert [r.reply_id for r in await outbox.after("api", cursor=0, limit=10,
                                                   conversation_id="c1")] == ["r1", "r4"]
    assert await outbox.undelivered("api") == 5


async def test_two_posters_never_claim_one_reply_both(
        outboxes: tuple[ReplyOutbox, ReplyOutbox]) -> None:
    one, two = outboxes
    for n in range(40):
        await one.keep(reply(n))
    claims = await asyncio.gather(*(
        outbox.claim_due("api", now_us=10 * SECOND, lease_us=30 * SECOND, limit=7)
        for outbox in (one, two) for _ in range(4)))
    claimed = Counter(r.reply_id for batch in claims for r in batch)
    assert set(claimed.values()) == {1} and len(claimed) == 40
    assert await one.claim_due("api", now_us=20 * SECOND, lease_us=SECOND, limit=50) == []


async def test_a_failed_reply_waits_and_a_lapsed_claim_is_taken_again(
        outboxes: tuple[ReplyOutbox, ReplyOutbox]) -> None:
    one, two = outboxes
    await one.keep(reply(1))
    await one.keep(reply(2))
    assert [r.reply_id for r in await one.claim_due(
        "api", now_us=SECOND, lease_us=5 * SECOND, limit=10)] == ["r1", "r2"]
    await one.failed("r1", retry_at_us=100 * SECOND, error="the callback answered 503")
    await one.delivered("r2", now_us=2 * SECOND)
    # r2 is delivered; r1 waits for its retry time, whatever the claim said
    assert await two.claim_due("api", now_us=50 * SECOND, lease_us=SECOND, limit=10) == []
    [due] = await two.claim_due("api", now_us=100 * SECOND, lease_us=SECOND, limit=10)
    assert (due.reply_id, due.attempts) == ("r1", 1)
    # the claimer died without a word: once its claim lapses another takes the reply
    [taken] = await one.claim_due("api", now_us=102 * SECOND, lease_us=SECOND, limit=10)
    assert taken.reply_id == "r1"
    assert await one.undelivered("api") == 1


async def test_old_replies_are_deleted_but_never_one_still_waiting(
        outboxes: tuple[ReplyOutbox, ReplyOutbox]) -> None:
    outbox, _ = outboxes
    for n in (1, 2, 3):
        await outbox.keep(replace(reply(n), created_us=n * SECOND))
    await outbox.delivered("r1", now_us=5 * SECOND)
    # With a callback: only what it took goes; r2 waits for it however old it is.
    assert await outbox.prune("api", before_us=3 * SECOND, delivered_only=True) == 1
    assert [r.reply_id for r in await outbox.after("api", cursor=0, limit=10)] == ["r2", "r3"]
    # Without one (replies are fetched): whatever is older goes; the cursor keeps counting.
    assert await outbox.prune("api", before_us=3 * SECOND, delivered_only=False) == 1
    later = await outbox.keep(replace(reply(4), created_us=4 * SECOND))
    [r3] = await outbox.after("api", cursor=0, limit=10, conversation_id="c0")
    assert later.cursor > r3.cursor
