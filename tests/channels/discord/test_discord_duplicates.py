"""A message Discord delivers twice (a replay after a resume) is one turn and one reply.

The channel hands both copies over; the receiver drops the second by its turn id.
"""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_duplicate_delivery_gives_one_turn_and_one_reply(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            first = await fake.deliver_message(world.general, author=world.ada, content="once")
            await fake.deliver("MESSAGE_CREATE", first)
            await fake.deliver_message(world.general, author=world.bob, content="after")
            turns = [await events.next_inbound() for _ in range(2)]
            await fake.wait_for_posts(2)

        assert [t.content for t in turns] == ["once", "after"]
        assert [p["content"] for p in fake.posts] == ["echo: once", "echo: after"]
        stored = await store.get(turns[0].conversation_id)
        assert [m.content for m in stored] == ["once", "after"]


async def test_a_replay_after_a_restart_is_still_one_turn(sqlite_url: str) -> None:
    """A new process remembers nothing; the stored turn id still makes a replay a no-op."""
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            message = await fake.deliver_message(world.general, author=world.ada, content="hi")
            await events.next_inbound()
            await fake.wait_for_posts(1)
        restarted = RecordingEvents(store)
        async with started_channel(fake, restarted):
            await fake.deliver("MESSAGE_CREATE", message)
            await fake.deliver_message(world.general, author=world.bob, content="new")
            fresh = await restarted.next_inbound()
            await fake.wait_for_posts(2)

        assert fresh.content == "new"
        assert [p["content"] for p in fake.posts] == ["echo: hi", "echo: new"]
