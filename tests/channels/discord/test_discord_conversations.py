"""DMs and threads are their own conversations, with the right scope and reply target."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_a_dm_is_an_at_me_conversation_answered_in_the_dm(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        dm = fake.add_dm(world.ada)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            await fake.deliver_message(dm, author=world.ada, content="psst")
            inbound = await events.next_inbound()
            await fake.wait_for_posts(1)

    assert inbound.conversation_id == f"discord:@me:{dm}"
    assert inbound.scope == "dm"
    assert inbound.participant.display_name == "Ada Lovelace"  # no server nickname in a DM
    assert (inbound.metadata.channel_id, inbound.metadata.thread_id) == (dm, None)
    assert inbound.metadata.channel_name is None
    assert [c.status for c in fake.calls_to("POST", rf"/channels/{dm}/messages")] == [200]


async def test_a_thread_is_its_own_conversation_answered_in_the_thread(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        thread = fake.add_thread(world.guild, parent_id=world.general, name="design",
                                 owner=world.bob)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            await fake.deliver_message(world.general, author=world.ada, content="in channel")
            await fake.deliver_message(thread, author=world.ada, content="in thread")
            turns = {m.content: m for m in [await events.next_inbound() for _ in range(2)]}
            await fake.wait_for_posts(2)

    in_thread = turns["in thread"]
    assert in_thread.conversation_id == f"discord:{world.guild.id}:{world.general}:{thread}"
    assert turns["in channel"].conversation_id == f"discord:{world.guild.id}:{world.general}"
    assert in_thread.scope == "thread"
    assert (in_thread.metadata.channel_id, in_thread.metadata.thread_id) == (world.general, thread)
    assert in_thread.metadata.channel_name == "general"
    assert in_thread.metadata.reply_to_participant_id == world.bob.id  # who opened the thread
    assert [c.status for c in fake.calls_to("POST", rf"/channels/{thread}/messages")] == [200]


async def test_a_thread_unknown_to_the_cache_is_placed_by_fetching_it(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: None)
        async with started_channel(fake, events):
            late = fake.add_thread(world.guild, parent_id=world.general, name="late",
                                   owner=world.ada, announce=False)
            await fake.deliver_message(late, author=world.ada, content="hello?")
            inbound = await events.next_inbound()

    assert inbound.conversation_id == f"discord:{world.guild.id}:{world.general}:{late}"
    assert [c.status for c in fake.calls_to("GET", rf"/channels/{late}")] == [200]
