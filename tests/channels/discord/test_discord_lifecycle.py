"""Starting, stopping and sharding: handlers finish, nothing leaks, endpoints stay consistent."""

from __future__ import annotations

import asyncio
from unittest.mock import ANY

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.channels.discord import DiscordChannel
from threadline.errors import ChannelError, ConfigError
from threadline.history import InMemoryConversationStore
from threadline.history.model import StoredMessage


class SlowEvents(RecordingEvents):
    """Holds each inbound message until released, like an agent still thinking."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.entered.set()
        await self.release.wait()
        await super().on_message(message, channel)


async def test_stop_lets_a_message_being_recorded_finish(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = SlowEvents(store, reply=lambda m: None)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02)
        await channel.start(events)
        await fake.deliver_message(world.general, author=world.ada, content="slow one")
        await events.entered.wait()
        stopping = asyncio.create_task(channel.stop())
        events.release.set()
        await stopping
        await channel.stop()  # a second stop is harmless

        # stop() waited for on_message to return: the turn is recorded.
        inbound = await events.next_inbound()
        assert [m.content for m in await store.get(inbound.conversation_id)] == ["slow one"]
        with pytest.raises(ChannelError, match="not started"):
            await channel.send_reply(inbound, "too late")


async def test_shards_auto_opens_the_recommended_shards_each_with_its_own_guilds(
        sqlite_url: str) -> None:
    async with FakeDiscord(recommended_shards=2) as fake, \
            SqlConversationStore(sqlite_url) as store:
        ada = fake.add_user("ada")
        guilds = [fake.add_guild(name=f"shard {n}", shard=(n, 2)) for n in (0, 1)]
        rooms = [fake.add_text_channel(guild, name="general") for guild in guilds]
        for guild in guilds:
            fake.add_member(guild, ada)
        dm = fake.add_dm(ada)
        events = RecordingEvents(store)
        async with started_channel(fake, events, shards="auto") as channel:
            assert channel.holding() == {"replica": ANY, "shards": [0, 1], "shard_count": 2}
            sent = [await fake.deliver_message(room, author=ada, content=f"hi {n}")
                    for n, room in enumerate(rooms)]
            sent.append(await fake.deliver_message(dm, author=ada, content="hi dm"))
            for _ in sent:
                await events.next_inbound()
            await fake.wait_for_posts(3)
            assert channel.receiving() is None

    assert [c.status for c in fake.calls_to("GET", "/gateway/bot")] == [200]
    assert fake.identifies == {0: 1, 1: 1}  # one session per shard, none unsharded
    shards = {d.message_id: d.shard for d in fake.dispatched}
    assert [shards[m["id"]] for m in sent] == [0, 1, 0]  # a DM arrives on shard 0
    assert sorted(p["content"] for p in fake.posts) == ["echo: hi 0", "echo: hi 1",
                                                        "echo: hi dm"]


async def test_two_channels_cannot_point_discord_py_at_different_servers() -> None:
    async with FakeDiscord() as fake, FakeDiscord() as elsewhere:
        DiscordWorld.build(fake)
        events = RecordingEvents(InMemoryConversationStore())
        async with started_channel(fake, events):
            stray = DiscordChannel(token=elsewhere.token, name="stray",
                                   api_base_url=elsewhere.api_base_url)
            with pytest.raises(ConfigError, match=r"'stray': api_base_url=.*conflicts"):
                await stray.start(events)
        # Once the first channel stopped, its endpoints are free for another.
        DiscordWorld.build(elsewhere)
        async with started_channel(elsewhere, events) as moved:
            assert moved.identity is not None
            assert moved.identity.user_id == elsewhere.bot.id


async def test_shards_auto_says_what_to_do_when_discord_gives_no_count() -> None:
    async with FakeDiscord() as fake:
        DiscordWorld.build(fake)
        fake.fail_next("GET", "/gateway/bot", status=403)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, shards="auto")
        with pytest.raises(ChannelError, match="set `shards:` to a number"):
            await channel.start(RecordingEvents(InMemoryConversationStore()))
        assert channel.receiving() == "not connected" and fake.identified_sessions == 0
