"""Discord replies are shown as the model writes them: one message edited, continued in new
messages before 2,000 characters, never edited faster than the configured pace, stored once.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest

from tests.channels.live_rig import (
    UNAVAILABLE_APOLOGY,
    live_team,
    replies_in,
    same_words,
    sqlite_store_fixture,
    words,
)
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, stream_error, text
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from threadline.backends.sql import SqlConversationStore
from threadline.channels.discord.channel import DiscordChannel

anthropic = fake_anthropic_fixture()
store = sqlite_store_fixture()
INTERVAL = 0.2


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


def channel_on(fake: FakeDiscord) -> DiscordChannel:
    return DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                          gateway_url=fake.gateway_url, guild_ready_timeout=0.02,
                          stream_interval=INTERVAL)


async def test_a_5000_character_reply_streams_across_messages_none_over_2000(
        discord: FakeDiscord, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    world = DiscordWorld.build(discord)
    reply = words(640)
    assert len(reply) > 5000
    anthropic.script(text(reply, tokens_per_second=400))
    async with live_team(store, channel_on(discord), anthropic):
        question = await discord.deliver_message(world.general, author=world.ada,
                                                  content="tell me everything")
        # Several paced edits of three messages: longer than the fake's default wait on a
        # loaded machine.
        await discord.wait_until(lambda: same_words(" ".join(discord.contents.values()), reply),
                                 within=30.0)
    writes = [c for c in discord.calls if c.method in ("POST", "PATCH")
              and c.path.startswith(f"/channels/{world.general}/messages")]
    assert all(c.status == 200 and len(c.json["content"]) <= 2000 for c in writes)
    assert len(discord.posted) >= 3
    assert writes[0].at < anthropic.stream_ends[0], "text showed before the model finished"
    assert sum(c.method == "PATCH" for c in writes) >= 3, "one message edited as text grew"
    gaps = [b.at - a.at for a, b in itertools.pairwise(writes)]
    assert sorted(gaps)[len(gaps) // 2] >= INTERVAL, "changes come at the configured pace"
    assert discord.posts[0]["message_reference"]["message_id"] == int(question["id"])
    ids = [m["id"] for m in discord.posted]
    assert same_words(" ".join(discord.contents[i] for i in ids), reply)
    [stored] = await replies_in(store, f"discord:{world.guild.id}:{world.general}")
    assert stored.content == reply
    assert stored.metadata.message_id == ids[0]
    assert stored.metadata.extra["part_ids"] == ids


async def test_a_model_error_mid_stream_ends_the_message_with_the_apology(
        discord: FakeDiscord, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    world = DiscordWorld.build(discord)
    anthropic.script(stream_error("overloaded_error", "Overloaded", after_text=words(40),
                                  tokens_per_second=50))
    async with live_team(store, channel_on(discord), anthropic):
        await discord.deliver_message(world.general, author=world.ada, content="hi")
        await discord.wait_until(lambda: UNAVAILABLE_APOLOGY in discord.contents.values())
    [posted] = discord.posts
    assert posted["content"].startswith("word0"), "part of the reply was shown"
    assert list(discord.contents.values()) == [UNAVAILABLE_APOLOGY]
    [stored] = await replies_in(store, f"discord:{world.guild.id}:{world.general}")
    assert stored.content == UNAVAILABLE_APOLOGY


async def test_a_failing_turn_without_error_replies_still_ends_what_was_shown(
        discord: FakeDiscord, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    world = DiscordWorld.build(discord)
    anthropic.script(stream_error("overloaded_error", "Overloaded", after_text=words(40),
                                  tokens_per_second=50))
    async with live_team(store, channel_on(discord), anthropic, friendly_errors=False):
        await discord.deliver_message(world.general, author=world.ada, content="hi")
        await discord.wait_until(lambda: UNAVAILABLE_APOLOGY in discord.contents.values())
    assert list(discord.contents.values()) == [UNAVAILABLE_APOLOGY]
    assert await replies_in(store, f"discord:{world.guild.id}:{world.general}") == []


async def test_typing_shows_while_the_model_works(
        discord: FakeDiscord, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    world = DiscordWorld.build(discord)
    anthropic.script(text("It shipped on Monday.", delay=0.3))
    async with live_team(store, channel_on(discord), anthropic):
        await discord.deliver_message(world.general, author=world.ada, content="hi")
        await discord.wait_for_posts(1)
    [typing] = discord.calls_to("POST", rf"/channels/{world.general}/typing")
    [post] = discord.calls_to("POST", rf"/channels/{world.general}/messages")
    assert typing.status == 204 and typing.at < post.at
