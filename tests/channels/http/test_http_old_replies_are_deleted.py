"""A channel deletes replies older than `keep_replies_days` when it starts and every hour
after; a reply still waiting for its callback stays, however old."""

from __future__ import annotations

import asyncio
import time

from tests.channels.http.conftest import SECRET
from tests.channels.recording import RecordingEvents
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.http_replies import SqlReplyOutbox
from threadline.channels.http.callback import CallbackPolicy
from threadline.channels.http.channel import HttpChannel
from threadline.channels.http.outbox import HttpReply

DAY_US = 86_400 * 1_000_000


def kept_days_ago(days: int, reply_id: str) -> HttpReply:
    return HttpReply(reply_id=reply_id, channel="api", conversation_id="c-1",
                     in_reply_to="m-1", turn_id="http:api:c-1:m-1", agent="support",
                     text="an old answer", created_us=int(time.time() * 1e6) - days * DAY_US)


async def remaining(outbox: SqlReplyOutbox, expected: list[str]) -> list[str]:
    for _ in range(600):
        ids = [r.reply_id for r in await outbox.after("api", cursor=0, limit=10)]
        if ids == expected:
            break
        await asyncio.sleep(0.05)
    return ids


async def test_fetched_replies_go_after_the_days_kept(sqlite_url: str) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        outbox = SqlReplyOutbox(store)
        await outbox.keep(kept_days_ago(40, "old"))
        await outbox.keep(kept_days_ago(2, "recent"))
        channel = HttpChannel(name="api", secret=SECRET, outbox=outbox,
                              keep_replies_seconds=30 * 86_400)
        await channel.start(RecordingEvents(store))
        try:
            assert await remaining(outbox, ["recent"]) == ["recent"]
        finally:
            await channel.stop()


async def test_a_reply_waiting_for_its_callback_is_never_deleted(sqlite_url: str) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        outbox = SqlReplyOutbox(store)
        await outbox.keep(kept_days_ago(40, "waiting"))
        await outbox.keep(kept_days_ago(40, "taken"))
        await outbox.delivered("taken", now_us=int(time.time() * 1e6) - 39 * DAY_US)
        channel = HttpChannel(
            name="api", secret=SECRET, outbox=outbox, keep_replies_seconds=30 * 86_400,
            callback=CallbackPolicy(url="http://127.0.0.1:9/replies", secret=SECRET,
                                    retry_initial_seconds=60))
        await channel.start(RecordingEvents(store))
        try:
            assert await remaining(outbox, ["waiting"]) == ["waiting"]
        finally:
            await channel.stop()
