"""What was said while the bot was away is read when it connects again, and answered once.

Discord never sends a new session what was dispatched before it: the channel reads each
recently heard conversation's history after the newest turn it stored (`channels.catch_up`).
"""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore


async def heard_then_stopped(fake: FakeDiscord, store: ConversationStore, world: DiscordWorld,
                             content: str) -> StoredMessage:
    """Ada says `content` in #general to a running bot, which answers it; then it stops."""
    events = RecordingEvents(store)
    async with started_channel(fake, events):
        await fake.deliver_message(world.general, author=world.ada, content=content)
        heard = await events.next_inbound()
        await fake.wait_for_posts(len(fake.posts) + 1)
    return heard


async def test_messages_said_while_away_are_answered_after_the_restart(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        first = await heard_then_stopped(fake, store, world, "before")
        # The bot is down: Discord dispatches these to nobody; a bot's message is not heard.
        fake.said_earlier(world.general, author=world.bob, content="while away")
        fake.said_earlier(world.general, author=world.other_bot, content="a bot's status")
        fake.said_earlier(world.general, author=world.ada, content="still there?")
        restarted = RecordingEvents(store)
        async with started_channel(fake, restarted):
            caught_up = [await restarted.next_inbound() for _ in range(2)]
            await fake.deliver_message(world.general, author=world.bob, content="live")
            live = await restarted.next_inbound()
            await fake.wait_for_posts(4)

        assert [t.content for t in caught_up] == ["while away", "still there?"]
        assert live.content == "live"
        assert [m.content for m in await store.get(first.conversation_id)] == [
            "before", "while away", "still there?", "live"]
        assert [p["content"] for p in fake.posts] == [
            "echo: before", "echo: while away", "echo: still there?", "echo: live"]


async def test_a_second_restart_reads_nothing_twice(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        first = await heard_then_stopped(fake, store, world, "one")
        fake.said_earlier(world.general, author=world.bob, content="two")
        async with started_channel(fake, RecordingEvents(store)):
            await fake.wait_for_posts(2)
        again = RecordingEvents(store)
        async with started_channel(fake, again):
            await fake.deliver_message(world.general, author=world.ada, content="three")
            assert (await again.next_inbound()).content == "three"
            await fake.wait_for_posts(3)

        assert [m.content for m in await store.get(first.conversation_id)] == [
            "one", "two", "three"]
        assert [p["content"] for p in fake.posts] == ["echo: one", "echo: two", "echo: three"]


async def test_catch_up_zero_reads_nothing(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        first = await heard_then_stopped(fake, store, world, "before")
        fake.said_earlier(world.general, author=world.bob, content="while away")
        restarted = RecordingEvents(store)
        async with started_channel(fake, restarted, catch_up=0):
            await fake.deliver_message(world.general, author=world.bob, content="live")
            assert (await restarted.next_inbound()).content == "live"

        assert [m.content for m in await store.get(first.conversation_id)] == ["before", "live"]
