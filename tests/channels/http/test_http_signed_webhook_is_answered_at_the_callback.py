"""A signed webhook becomes one turn, answered by the agent it names, at the callback.

The reply reaches the caller's callback signed with the shared secret (the fake checks it with
its own HMAC), carrying the caller's conversation and message ids; the same replies can be
fetched by cursor from PATH/replies, signed over the request target.
"""

from __future__ import annotations

import asyncio

from tests.channels.http.conftest import Rig
from threadline.history.changes import HistoryChange


async def test_a_signed_message_is_answered_at_the_callback(rig: Rig) -> None:
    # The reply is recorded in the history once the outbox holds it, which may be just after
    # the callback has it: the second append to the conversation is waited for.
    appends: list[HistoryChange] = []
    second_append = asyncio.Event()
    loop = asyncio.get_running_loop()

    def heard(change: HistoryChange) -> None:
        appends.append(change)
        if len(appends) >= 2:
            loop.call_soon_threadsafe(second_append.set)

    rig.store.subscribe(heard, conversation_id="http:api:order-1234")
    status, answer = await rig.caller.send(rig.channel.url, conversation_id="order-1234",
                                           message_id="evt-1", text="where is my parcel?")
    assert (status, answer) == (202, {"accepted": True, "conversation_id": "order-1234",
                                      "message_id": "evt-1"})
    [reply] = await rig.caller.wait_for_replies(1)
    assert reply["text"] == "re: Customer-42: where is my parcel?"
    assert (reply["conversation_id"], reply["in_reply_to"], reply["agent"]) == (
        "order-1234", "evt-1", "support")
    assert rig.caller.refused_signatures == 0
    async with asyncio.timeout(10):
        await second_append.wait()
    turns = await rig.store.get("http:api:order-1234")
    assert [(t.participant.id, t.content) for t in turns] == [
        ("customer-42", "where is my parcel?"), ("support", "re: Customer-42: where is my parcel?")]
    assert turns[1].metadata.message_id == reply["reply_id"]


async def test_to_names_the_agent_that_answers(rig: Rig) -> None:
    await rig.caller.send(rig.channel.url, conversation_id="c-2", message_id="evt-2",
                          text="was I charged twice?", to="billing")
    [reply] = await rig.caller.wait_for_replies(1)
    assert reply["agent"] == "billing"


async def test_replies_are_fetched_by_cursor(rig: Rig) -> None:
    for n in range(3):
        await rig.caller.send(rig.channel.url, conversation_id=f"c-{n % 2}",
                              message_id=f"evt-{n}", text=f"question {n}")
    await rig.caller.wait_for_replies(3)
    status, page = await rig.caller.fetch(rig.channel.url, after=0)
    assert status == 200
    assert sorted(r["text"] for r in page["replies"]) == [
        f"re: Customer-42: question {n}" for n in range(3)]
    cursors = [r["cursor"] for r in page["replies"]]
    assert cursors == sorted(cursors) and page["next_cursor"] == cursors[-1]
    _, rest = await rig.caller.fetch(rig.channel.url, after=cursors[0])
    assert [r["cursor"] for r in rest["replies"]] == cursors[1:]
    _, one = await rig.caller.fetch(rig.channel.url, after=0, conversation_id="c-1")
    assert [r["text"] for r in one["replies"]] == ["re: Customer-42: question 1"]
    _, none = await rig.caller.fetch(rig.channel.url, after=page["next_cursor"])
    assert none == {"replies": [], "next_cursor": page["next_cursor"]}
