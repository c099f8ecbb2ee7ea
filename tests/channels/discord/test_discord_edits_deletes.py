"""Edits and deletions on Discord are reflected in the stored conversation."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_an_edit_rewrites_the_stored_turn(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: None)
        async with started_channel(fake, events):
            message = await fake.deliver_message(world.general, author=world.ada,
                                                 content="teh answer")
            inbound = await events.next_inbound()
            # A link preview arriving is an update without an edit time: not a user edit.
            await fake.deliver("MESSAGE_UPDATE", {**message, "embeds": [{"type": "link"}]})
            edited = await fake.deliver_edit(message, f"the answer, <@{world.bob.id}>")
            await fake.deliver("MESSAGE_UPDATE", edited)  # delivered twice
            await fake.deliver_edit(message, "the final answer")
            await fake.deliver_message(world.general, author=world.bob, content="sentinel")
            await events.next_inbound()

        stored = await store.get_by_ids(inbound.conversation_id, [inbound.id])

    assert [e[2] for e in events.edits] == [f"the answer, @{world.bob.id}", "the final answer"]
    assert all(e[:2] == (inbound.conversation_id, inbound.id) for e in events.edits)
    assert [m.content for m in stored] == ["the final answer"]


async def test_a_deletion_removes_the_stored_turn(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: None)
        async with started_channel(fake, events):
            doomed = await fake.deliver_message(world.general, author=world.ada, content="oops")
            first = await events.next_inbound()
            await fake.deliver_message(world.general, author=world.ada, content="kept")
            await events.next_inbound()
            await fake.deliver_delete(doomed)
            await fake.deliver_delete(doomed)
            await fake.deliver_message(world.general, author=world.bob, content="sentinel")
            await events.next_inbound()

        remaining = await store.get(first.conversation_id)

    assert events.deletes == [(first.conversation_id, first.id)]
    assert [m.content for m in remaining] == ["kept", "sentinel"]
