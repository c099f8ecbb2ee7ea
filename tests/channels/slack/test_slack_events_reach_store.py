"""A Slack post becomes one stored turn in the right conversation; the reply lands in place."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import FakeSlack, slack_rig
from threadline.channels.slack import SlackChannel

Rig = tuple[FakeSlack, SlackChannel, RecordingEvents]


@pytest.fixture
async def rig(sqlite_url: str) -> AsyncIterator[Rig]:
    async with slack_rig(sqlite_url) as value:
        yield value


async def test_a_mention_in_a_channel_is_stored_and_answered_in_a_thread_under_it(rig: Rig) -> None:
    fake, channel, events = rig
    event = fake.message_event("<@U0BOT> what is the plan?")

    delivery = await fake.deliver_event(channel.events_url, event)
    message = await events.next_inbound()
    [post] = await fake.wait_for_calls("chat.postMessage", 1)

    assert delivery.status == 200
    assert message.conversation_id == "slack:T0FAKE:C0GENERAL"
    assert message.id == f"slack:T0FAKE:C0GENERAL:{event['ts']}"
    assert message.scope == "channel"
    assert message.content == "@threadline what is the plan?"
    assert message.participant.id == "U0ALICE"
    assert message.participant.display_name == "Alice"
    assert message.metadata.mentions == ("U0BOT",)
    assert message.metadata.channel_name == "general"
    assert message.metadata.message_id == event["ts"]
    assert message.metadata.thread_id is None
    assert post.params["channel"] == "C0GENERAL"
    assert post.params["thread_ts"] == event["ts"]
    assert post.params["text"] == "echo: @threadline what is the plan?"
    assert post.token == fake.bot_token
    stored = await events.store.get(message.conversation_id)
    assert [m.id for m in stored] == [message.id]


async def test_the_bot_identity_comes_from_auth_test(rig: Rig) -> None:
    fake, channel, _ = rig
    assert channel.identity is not None
    assert channel.identity.user_id == "U0BOT"
    assert set(channel.identity.aliases) >= {"U0BOT", "threadline", "B0BOT"}
    assert fake.calls_to("auth.test")


async def test_a_thread_reply_is_its_own_conversation_and_names_the_parent_author(
    rig: Rig,
) -> None:
    fake, channel, events = rig
    event = fake.message_event("and then?", thread_ts="1600000000.000001",
                               parent_user_id="U0BOT")

    await fake.deliver_event(channel.events_url, event)
    message = await events.next_inbound()
    [post] = await fake.wait_for_calls("chat.postMessage", 1)

    assert message.conversation_id == "slack:T0FAKE:C0GENERAL:1600000000.000001"
    assert message.scope == "thread"
    assert message.metadata.thread_id == "1600000000.000001"
    assert message.metadata.reply_to_message_id == "1600000000.000001"
    assert message.metadata.reply_to_participant_id == "U0BOT"
    assert post.params["thread_ts"] == "1600000000.000001"


async def test_a_direct_message_has_dm_scope_and_is_answered_in_the_dm(rig: Rig) -> None:
    fake, channel, events = rig
    event = fake.message_event("hello there", channel="D0ALICE", channel_type="im")

    await fake.deliver_event(channel.events_url, event)
    message = await events.next_inbound()
    [post] = await fake.wait_for_calls("chat.postMessage", 1)

    assert message.conversation_id == "slack:T0FAKE:D0ALICE"
    assert message.scope == "dm"
    assert message.metadata.channel_name is None
    assert post.params["channel"] == "D0ALICE"
    assert "thread_ts" not in post.params
    assert not fake.calls_to("conversations.info")


async def test_reply_in_channel_when_threads_are_turned_off(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, reply_in_thread=False) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("top level"))
        await events.next_inbound()
        [post] = await fake.wait_for_calls("chat.postMessage", 1)
        assert "thread_ts" not in post.params
        assert post.params["channel"] == "C0GENERAL"


async def test_user_names_are_looked_up_once_for_many_messages(rig: Rig) -> None:
    fake, channel, events = rig
    for text in ("one <@U0ALICE>", "two", "three"):
        await fake.deliver_event(channel.events_url, fake.message_event(text))
        await events.next_inbound()
    await fake.wait_for_calls("chat.postMessage", 3)

    looked_up = [c.params["user"] for c in fake.calls_to("users.info")]
    assert looked_up.count("U0ALICE") == 1
    assert len(fake.calls_to("conversations.info")) == 1


async def test_turns_of_one_conversation_are_stored_in_arrival_order(rig: Rig) -> None:
    fake, channel, events = rig
    await fake.deliver_event(channel.events_url, fake.message_event("warm Alice's name"))
    await events.next_inbound()
    fake.add_user("U0BOB", display_name="Bob")
    gate = fake.hold("users.info")

    first = fake.message_event("Bob first (his name is being looked up)", user="U0BOB")
    second = fake.message_event("Alice second (her name is cached)")
    await fake.deliver_event(channel.events_url, first)
    await fake.deliver_event(channel.events_url, second)
    await fake.wait_for_calls("users.info", 3)  # bot, Alice, then Bob: held
    gate.set()

    arrived = [await events.next_inbound(), await events.next_inbound()]
    stored = await events.store.get("slack:T0FAKE:C0GENERAL")
    assert [m.metadata.message_id for m in arrived] == [first["ts"], second["ts"]]
    assert [m.metadata.message_id for m in stored[1:]] == [first["ts"], second["ts"]]
