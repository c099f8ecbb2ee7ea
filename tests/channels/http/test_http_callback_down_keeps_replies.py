"""A callback that is down loses no reply: retried with backoff, kept, delivered once it is back.

The callback refuses connections (its port closed), then answers 503: each attempt is counted
in the outbox and the reply waits there. Once the callback answers again the reply arrives,
once. A reply still waiting when the process stops is posted by the next process on the same
database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tests.channels.http.conftest import SECRET, Rig
from tests.fakes.http_caller import FakeCaller
from tests.interceptors.scripted import ScriptedModel
from threadline.agents import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.http_replies import SqlReplyOutbox
from threadline.channels.http.callback import CallbackPolicy
from threadline.channels.http.channel import HttpChannel
from threadline.channels.http.outbox import HttpReply
from threadline.team import Team


async def kept(outbox: SqlReplyOutbox) -> list[HttpReply]:
    return await outbox.after("api", cursor=0, limit=10)


async def eventually(holds: Callable[[], Awaitable[bool]]) -> None:
    """Until `holds()` is true (checked every 50 ms, at most 30 s): the outbox is a table."""
    for _ in range(600):
        if await holds():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError


async def attempts_reach(outbox: SqlReplyOutbox, count: int) -> None:
    async def reached() -> bool:
        replies = await kept(outbox)
        return bool(replies) and replies[0].attempts >= count

    await eventually(reached)


async def test_a_refused_then_busy_callback_gets_the_reply_once_it_is_back(rig: Rig) -> None:
    await rig.caller.go_down()
    status, _ = await rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="m-1",
                                      text="are you there?")
    assert status == 202
    await attempts_reach(rig.outbox, 2)  # refused connections, retried
    assert await rig.outbox.undelivered("api") == 1
    rig.caller.status = 503
    await rig.caller.come_back()
    await rig.caller.wait_for_posts(2)  # answered 503: still kept, retried
    assert rig.caller.replies == {}
    assert await rig.outbox.undelivered("api") == 1
    rig.caller.status = 200
    [reply] = await rig.caller.wait_for_replies(1)
    assert reply["text"] == "re: Customer-42: are you there?"
    # The callback answered; the outbox notes it just after.
    await eventually(lambda: _none_waiting(rig.outbox))
    posted = len(rig.caller.posts)
    await asyncio.sleep(0.3)  # several polls: a delivered reply is not posted again
    assert len(rig.caller.posts) == posted


async def _none_waiting(outbox: SqlReplyOutbox) -> bool:
    return await outbox.undelivered("api") == 0


async def serve(url: str, caller: FakeCaller, until: asyncio.Event,
                started: asyncio.Event) -> None:
    """One process's worth: a team on the database at `url`, until `until` is set."""
    async with SqlConversationStore(url) as store:
        channel = HttpChannel(
            name="api", secret=SECRET, outbox=SqlReplyOutbox(store),
            callback=CallbackPolicy(url=caller.callback_url, secret=SECRET,
                                    retry_initial_seconds=0.05, retry_max_seconds=0.1,
                                    poll_seconds=0.05))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=ScriptedModel())])
        team.attach(channel)
        await team.start()
        caller.url = channel.url  # type: ignore[attr-defined]
        started.set()
        try:
            await until.wait()
        finally:
            await team.stop()


async def test_a_reply_kept_at_shutdown_is_delivered_by_the_next_process(
        sqlite_url: str, caller: FakeCaller) -> None:
    await caller.go_down()
    stop_first, first_started = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(serve(sqlite_url, caller, stop_first, first_started))
    await first_started.wait()
    assert (await caller.send(caller.url, conversation_id="c-1",  # type: ignore[attr-defined]
                              message_id="m-1", text="hello?"))[0] == 202
    async with SqlConversationStore(sqlite_url) as store:
        await attempts_reach(SqlReplyOutbox(store), 1)
    stop_first.set()
    await first
    assert caller.replies == {}

    await caller.come_back()
    stop_second, second_started = asyncio.Event(), asyncio.Event()
    second = asyncio.create_task(serve(sqlite_url, caller, stop_second, second_started))
    try:
        [reply] = await caller.wait_for_replies(1)
        assert (reply["in_reply_to"], reply["text"]) == ("m-1", "re: Customer-42: hello?")
    finally:
        stop_second.set()
        await second
    assert len(caller.posts) == 1
