"""A delivery retried with the same idempotency key is one turn, answered once.

The sender may retry after a timeout, or send the key as the `Idempotency-Key` header rather
than as `message_id`: every copy is answered 202, one turn is stored and one reply reaches the
callback. Two different keys are two turns.
"""

from __future__ import annotations

import asyncio

from tests.channels.http.conftest import Rig


async def test_a_retried_message_id_is_one_turn(rig: Rig) -> None:
    sends = [rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="evt-9",
                             text="refund please") for _ in range(3)]
    sends.append(rig.caller.send(rig.channel.url, conversation_id="c-1", message_id=None,
                                 text="refund please", headers={"Idempotency-Key": "evt-9"}))
    assert [status for status, _ in await asyncio.gather(*sends)] == [202] * 4
    await rig.caller.wait_for_replies(1)
    await rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="evt-10",
                          text="and another thing")
    await rig.caller.wait_for_replies(2)
    turns = await rig.store.get("http:api:c-1")
    assert [t.content for t in turns if t.participant.kind == "user"] == [
        "refund please", "and another thing"]
    assert len(rig.caller.posts) == 2
    assert sorted(r["in_reply_to"] for r in rig.caller.replies.values()) == ["evt-10", "evt-9"]


async def test_a_header_and_a_field_that_disagree_are_refused(rig: Rig) -> None:
    status, answer = await rig.caller.send(rig.channel.url, conversation_id="c-1",
                                           message_id="evt-1",
                                           headers={"Idempotency-Key": "evt-2"}, text="hi")
    assert (status, answer["error"]) == (400, "conflicting_ids")
