"""Socket Mode: events arrive over the WebSocket, are acked by envelope, and answered once."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import FakeSlack, slack_rig
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.errors import ChannelAuthError


async def test_an_event_over_the_socket_is_acked_stored_and_answered(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, mode="socket") as (fake, _, events):
        event = fake.message_event("<@U0BOT> status?")
        ack = await fake.send_socket_event(event)
        message = await events.next_inbound()
        [post] = await fake.wait_for_calls("chat.postMessage", 1)

        assert ack["envelope_id"].startswith("env-")
        assert message.conversation_id == "slack:T0FAKE:C0GENERAL"
        assert message.content == "@threadline status?"
        assert post.params["thread_ts"] == event["ts"]
        [opened] = fake.calls_to("apps.connections.open")
        assert opened.token == fake.app_token


async def test_a_redelivered_envelope_is_one_turn(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, mode="socket") as (fake, channel, events):
        event = fake.message_event("once only")
        await fake.send_socket_event(event, event_id="Ev0SOCK")
        await fake.send_socket_event(event, event_id="Ev0SOCK", retry_attempt=1)
        await fake.send_socket_event(fake.message_event("barrier"))

        assert (await events.next_inbound()).content == "once only"
        assert (await events.next_inbound()).content == "barrier"
        await channel.stop()
        assert events.inbound.empty()
        assert len(fake.calls_to("chat.postMessage")) == 2
        assert len(fake.socket_acks) == 3


async def test_a_rejected_app_token_fails_start_clearly(sqlite_url: str) -> None:
    async with FakeSlack() as fake, SqlConversationStore(sqlite_url) as store:
        channel = SlackChannel(**{**fake.channel_settings(mode="socket"),
                                  "app_token": "xapp-wrong"})
        with pytest.raises(ChannelAuthError, match="app_token"):
            await channel.start(RecordingEvents(store))
        await channel.stop()
        assert len(fake.calls_to("apps.connections.open")) == 1


async def test_a_rejected_bot_token_fails_start_clearly(sqlite_url: str) -> None:
    async with FakeSlack() as fake, SqlConversationStore(sqlite_url) as store:
        channel = SlackChannel(**{**fake.channel_settings(), "bot_token": "xoxb-wrong"})
        with pytest.raises(ChannelAuthError, match="bot_token"):
            await channel.start(RecordingEvents(store))
        assert [c.method for c in fake.calls] == ["auth.test"]
