"""Start-up fails fast and clearly when Discord would leave the bot deaf or silent."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.channels.discord import DiscordChannel
from threadline.errors import ChannelAuthError, ConfigError
from threadline.history import InMemoryConversationStore


async def test_a_wrong_token_is_rejected_and_nothing_reaches_events() -> None:
    async with FakeDiscord() as fake:
        DiscordWorld.build(fake)
        events = RecordingEvents(InMemoryConversationStore())
        channel = DiscordChannel(token="not-the-token", name="ops", api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url)
        with pytest.raises(ChannelAuthError, match=r"'ops'.*Reset Token"):
            await channel.start(events)
        await channel.stop()

    assert [(c.path, c.status) for c in fake.calls] == [("/users/@me", 401)]
    assert events.inbound.empty()


async def test_missing_message_content_intent_fails_start_with_the_portal_steps() -> None:
    async with FakeDiscord(grant_message_content=False) as fake:
        DiscordWorld.build(fake)
        events = RecordingEvents(InMemoryConversationStore())
        with pytest.raises(ConfigError, match="Message Content Intent"):
            async with started_channel(fake, events, name="ops"):
                pass

    assert fake.gateway_closes == [4014]


async def test_check_reports_the_missing_intent_and_an_empty_server_list() -> None:
    async with FakeDiscord(grant_message_content=False) as fake:
        channel = DiscordChannel(token=fake.token, name="ops", api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url)
        problems = await channel.check()
        await channel.stop()

    assert len(problems) == 2
    assert "Developer Portal" in problems[0] and "Message Content Intent" in problems[0]
    assert "in no servers" in problems[1] and "'ops'" in problems[1]


async def test_check_is_quiet_for_a_well_set_up_bot() -> None:
    async with FakeDiscord() as fake:
        DiscordWorld.build(fake)
        async with started_channel(fake, RecordingEvents(InMemoryConversationStore())) as channel:
            assert await channel.check() == []


def test_an_empty_token_is_a_config_error_naming_the_channel() -> None:
    with pytest.raises(ConfigError, match=r"'ops'.*`token`"):
        DiscordChannel(token="  ", name="ops")
