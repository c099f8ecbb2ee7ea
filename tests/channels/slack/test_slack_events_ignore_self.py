"""The bot never hears itself; other bots are heard only when `allow_bots` is set."""

from __future__ import annotations

from tests.fakes.slack import slack_rig


async def test_the_bots_own_messages_never_reach_events(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        own = fake.message_event("my own reply", user="U0BOT", bot_id="B0BOT")
        await fake.deliver_event(channel.events_url, own)
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))

        assert (await events.next_inbound()).content == "barrier"
        await channel.stop()
        assert events.inbound.empty()
        assert len(fake.calls_to("chat.postMessage")) == 1


async def test_other_bots_are_dropped_by_default(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        other = fake.message_event("beep", user=None, bot_id="B0OTHER", subtype="bot_message")
        other["username"] = "deploybot"
        await fake.deliver_event(channel.events_url, other)
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))

        assert (await events.next_inbound()).content == "barrier"
        await channel.stop()
        assert events.inbound.empty()
        assert await events.store.count() == 1


async def test_other_bots_are_heard_with_allow_bots(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, allow_bots=True) as (fake, channel, events):
        other = fake.message_event("beep", user=None, bot_id="B0OTHER", subtype="bot_message")
        other["username"] = "deploybot"
        own = fake.message_event("my own reply", user="U0BOT", bot_id="B0BOT")
        await fake.deliver_event(channel.events_url, own)
        await fake.deliver_event(channel.events_url, other)

        message = await events.next_inbound()
        assert message.participant.id == "B0OTHER"
        assert message.participant.display_name == "deploybot"
        assert message.metadata.extra["is_bot"] is True
        await channel.stop()
        assert events.inbound.empty()
