"""Whatever arrives in a sync, the channel keeps listening: malformed events are skipped and
counted, the bot's own and encrypted messages are not answered (an encrypted room is told why,
once), and a batch whose turn could not be recorded is not acknowledged: it comes again."""

from __future__ import annotations

import asyncio

from tests.channels.matrix.rig import matrix_channel
from tests.channels.recording import RecordingEvents
from tests.fakes.matrix import ALICE, BOT, FakeMatrix
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix import MatrixChannel
from threadline.channels.matrix.encryption import ENCRYPTED_REFUSAL


async def test_malformed_events_are_skipped_and_the_next_is_taken(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    room = fake.add_room("Alice", members=[ALICE])
    fake.raw(room, {"type": "m.room.message", "content": {"body": "no sender, no id"}})
    fake.raw(room, {"type": "m.room.message", "sender": ALICE, "event_id": "$c1",
                    "content": "not an object"})
    fake.raw(room, {"type": "m.room.message", "sender": ALICE, "event_id": "$c2",
                    "content": {"msgtype": "m.text", "body": 42}})
    fake.raw(room, {"type": "m.room.message", "sender": ALICE, "event_id": "$c3",
                    "content": {"msgtype": "m.file", "body": "x", "url": "file:///etc/passwd"}})
    fake.raw(room, ["not", "an", "event"])  # type: ignore[arg-type]
    fake.message(room, BOT, "the bot's own words")
    fake.message(room, ALICE, "still listening?")
    turn = await events.next_inbound()
    await fake.wait_for_sync_past(fake.position)
    assert turn.content == "still listening?"
    assert events.inbound.empty()
    assert channel.skipped_events >= 2
    assert channel.receiving() is None


async def test_an_encrypted_room_is_told_once_and_nothing_is_answered(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    room = fake.add_room("Secret", members=[ALICE], encrypted=True)
    fake.encrypted(room, ALICE)
    fake.encrypted(room, ALICE)
    await fake.wait_for_sync_past(fake.position)
    notices = [s for s in fake.messages_sent() if s.room_id == room]
    assert [s.content["body"] for s in notices] == [ENCRYPTED_REFUSAL]
    assert notices[0].content["msgtype"] == "m.notice"
    assert events.inbound.empty() and await events.store.count() == 0


async def test_a_turn_not_recorded_keeps_the_position_and_comes_again(
        fake: FakeMatrix, events: RecordingEvents) -> None:
    assert isinstance(events.store, SqlConversationStore)
    room = fake.add_room("Alice", members=[ALICE])
    refused: list[str] = []

    def refuse_once(message: object) -> bool:
        if not refused:
            refused.append(str(message))
            return True
        return False

    events.refuse = refuse_once  # type: ignore[assignment]
    channel = matrix_channel(fake, events.store)
    await channel.start(events)
    try:
        before = fake.position
        fake.message(room, ALICE, "first")
        fake.message(room, ALICE, "second")
        first = await events.next_inbound()
        second = await events.next_inbound()
        await fake.wait_for_sync_past(fake.position)
    finally:
        await channel.stop()
    assert refused and [first.content, second.content] == ["first", "second"]
    # The refused batch was asked for again from the same position.
    assert fake.sync_requests.count(str(before)) >= 2
    assert [m.content for m in await events.store.get(f"matrix:{room}")] == ["first", "second"]


async def test_a_forged_thread_root_or_a_crowd_of_mentions_changes_no_address(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
    fake.raw(room, {"type": "m.room.message", "sender": ALICE, "event_id": "$f1",
                    "origin_server_ts": 1, "content": {
                        "msgtype": "m.text", "body": "look",
                        "m.relates_to": {"rel_type": "m.thread",
                                         "event_id": "!other:fake.test:and more"}}})
    crowd = [f"@u{n}:fake.test" for n in range(500)] + [BOT]
    fake.message(room, ALICE, "hello all", mentions=crowd)
    forged = await events.next_inbound()
    crowded = await events.next_inbound()
    assert forged.conversation_id == f"matrix:{room}" and forged.metadata.thread_id is None
    assert len(crowded.metadata.mentions) <= 50
    assert BOT not in crowded.metadata.mentions  # past the cap: not an address


async def test_a_homeserver_that_fails_syncs_is_waited_out(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    room = fake.add_room("Alice", members=[ALICE])
    await fake.wait_for_sync_past(fake.position)
    fake.fail("sync", status=502, errcode="M_UNKNOWN", error="bad gateway", times=2)
    fake.message(room, ALICE, "are you there?")
    turn = await asyncio.wait_for(events.next_inbound(), 30)
    assert turn.content == "are you there?"
    assert [c.status for c in fake.calls_of("sync")].count(502) == 2
    assert channel.receiving() is None  # well again
