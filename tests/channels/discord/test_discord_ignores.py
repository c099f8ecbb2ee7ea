"""The bot never hears itself; other bots only when allow_bots is set.

discord.py hands each event to its own task in arrival order, and the channel filters before
its first wait, so once a later message reaches `on_message`, every earlier one has either
reached it too or been dropped: the sentinel proves a drop without sleeping.
"""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.history.model import StoredMessage


class ArrivalOrderEvents(RecordingEvents):
    """Notes each message as `on_message` is entered, before the store is touched."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.arrived: list[str] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.arrived.append(message.content)
        await super().on_message(message, channel)


async def test_own_and_other_bots_messages_are_dropped(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = ArrivalOrderEvents(store)
        async with started_channel(fake, events):
            await fake.deliver_message(world.general, author=world.ada, content="first")
            await events.next_inbound()
            await fake.wait_for_posts(1)  # the fake echoes the bot's reply back, like Discord
            await fake.deliver_message(world.general, author=fake.bot, content="me again")
            await fake.deliver_message(world.general, author=world.other_bot, content="beep")
            await fake.deliver_message(world.general, author=world.bob, content="sentinel")
            await events.next_inbound()
            await events.drain()

    assert events.arrived == ["first", "sentinel"]
    assert [p["content"] for p in fake.posts] == ["echo: first", "echo: sentinel"]


async def test_allow_bots_hears_other_bots_but_still_not_itself(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = ArrivalOrderEvents(store, reply=lambda m: None)
        async with started_channel(fake, events, allow_bots=True):
            await fake.deliver_message(world.general, author=fake.bot, content="me")
            await fake.deliver_message(world.general, author=world.other_bot, content="beep")
            await fake.deliver_message(world.general, author=world.bob, content="sentinel")
            turns = [await events.next_inbound() for _ in range(2)]

    assert events.arrived == ["beep", "sentinel"]
    assert turns[0].participant.id == world.other_bot.id
