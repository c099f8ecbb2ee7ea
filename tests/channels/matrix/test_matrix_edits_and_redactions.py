"""An edit (`m.replace`) replaces the stored turn's text and a redaction removes it, in the
conversation the message was said in (a thread's, too); neither is a new turn."""

from __future__ import annotations

from tests.channels.matrix.rig import matrix_channel
from tests.channels.recording import RecordingEvents
from tests.fakes.matrix import ALICE, FakeMatrix
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix import MatrixChannel


async def test_an_edit_and_a_redaction_in_a_thread_reach_the_inbox(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
    root = fake.message(room, ALICE, "deploys")
    original = fake.message(room, ALICE, "the deploy is at 5", thread=root["event_id"])
    spare = fake.message(room, ALICE, "and the review at 7", thread=root["event_id"])
    await events.next_inbound()
    inbound = await events.next_inbound()
    await events.next_inbound()
    fake.edit(room, original, "the deploy is at 6")
    fake.redact(room, spare)
    await fake.wait_for_sync_past(fake.position)

    thread = f"matrix:{room}:{root['event_id']}"
    assert inbound.conversation_id == thread
    assert events.edits == [(thread, inbound.id, "the deploy is at 6")]
    assert events.deletes == [(thread, f"matrix:{room}:{spare['event_id']}")]
    stored = await events.store.get(thread)
    assert [m.content for m in stored] == ["the deploy is at 6"]


async def test_an_edit_of_a_message_said_before_a_restart_finds_its_thread(
        fake: FakeMatrix, events: RecordingEvents) -> None:
    """The original is read from the homeserver when this process never saw it."""
    assert isinstance(events.store, SqlConversationStore)
    room = fake.add_room("Shop", members=[ALICE, "@carol:fake.test"])
    root = fake.message(room, ALICE, "deploys")
    fresh = matrix_channel(fake, events.store)
    await fresh.start(events)
    original = fake.message(room, ALICE, "the deploy is at 5", thread=root["event_id"])
    await fake.wait_for_sync_past(fake.position)
    await fresh.stop()
    again = matrix_channel(fake, events.store)
    await again.start(events)
    try:
        fake.edit(room, original, "the deploy is at 6")
        await fake.wait_for_sync_past(fake.position)
    finally:
        await again.stop()
    thread = f"matrix:{room}:{root['event_id']}"
    assert events.edits == [(thread, f"matrix:{room}:{original['event_id']}",
                             "the deploy is at 6")]
    assert [m.content for m in await events.store.get(thread)] == ["the deploy is at 6"]


async def test_an_edit_by_someone_else_changes_nothing(
        fake: FakeMatrix, events: RecordingEvents, channel: MatrixChannel) -> None:
    """Homeservers accept an `m.replace` from anyone; only the author's counts."""
    room = fake.add_room("Shop", members=[ALICE, "@mallory:fake.test"])
    original = fake.message(room, ALICE, "pay the invoice to account 1234")
    inbound = await events.next_inbound()
    fake.edit(room, original, "pay the invoice to account 6666", sender="@mallory:fake.test")
    await fake.wait_for_sync_past(fake.position)
    assert events.edits == []
    [stored] = await events.store.get(inbound.conversation_id)
    assert stored.content == "pay the invoice to account 1234"
