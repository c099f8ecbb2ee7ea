"""Private chats, forum topics and groups each get their documented conversation id and scope,
and updates are handed over one at a time in the order Telegram sent them."""

from __future__ import annotations

import asyncio

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, BOB, FORUM, GROUP, FakeTelegram, private_chat
from threadline.channels.base import Channel
from threadline.channels.telegram import TelegramChannel
from threadline.history.model import StoredMessage


async def test_private_chat_is_a_dm_answered_without_quoting(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(private_chat(ALICE), ALICE, "hello"))

    inbound = await events.next_inbound()
    [call] = await fake.wait_for_calls("sendMessage", 1)

    assert inbound.conversation_id == f"telegram:{ALICE.id}"
    assert inbound.scope == "dm"
    assert inbound.metadata.channel_name == "Alice"
    assert call.params["chat_id"] == ALICE.id
    assert "reply_parameters" not in call.params
    assert "message_thread_id" not in call.params


async def test_forum_topic_message_is_a_thread_answered_in_its_topic(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    update = fake.message(FORUM, ALICE, "@support_bot in the topic", topic_id=77)
    await fake.deliver(update)

    inbound = await events.next_inbound()
    [call] = await fake.wait_for_calls("sendMessage", 1)

    assert inbound.conversation_id == f"telegram:{FORUM.id}:77"
    assert inbound.scope == "thread"
    assert inbound.metadata.thread_id == "77"
    # Telegram makes it a reply to the topic's creation notice; that is not a reply to anyone.
    assert inbound.metadata.reply_to_message_id is None
    assert inbound.metadata.reply_to_participant_id is None
    assert call.params["message_thread_id"] == 77
    assert call.params["reply_parameters"]["message_id"] == update["message"]["message_id"]


async def test_general_topic_of_a_forum_is_the_chat_itself(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(FORUM, ALICE, "@support_bot in general"))

    inbound = await events.next_inbound()
    [call] = await fake.wait_for_calls("sendMessage", 1)

    assert inbound.conversation_id == f"telegram:{FORUM.id}"
    assert inbound.scope == "channel"
    assert inbound.metadata.thread_id is None
    assert "message_thread_id" not in call.params


class GatedEvents:
    """Holds the first message until released, to show what runs while it is in flight."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.arrived = asyncio.Condition()
        self.release = asyncio.Event()

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        async with self.arrived:
            self.started.append(message.content)
            self.arrived.notify_all()
        if message.content == "first":
            await self.release.wait()

    async def on_edit(self, conversation_id: str, message_id: str, content: str) -> None:
        raise AssertionError("no edits in this scenario")

    async def on_delete(self, conversation_id: str, message_id: str) -> None:
        raise AssertionError("Telegram sends no deletions")

    async def wait_started(self, count: int) -> None:
        async with asyncio.timeout(5.0), self.arrived:
            await self.arrived.wait_for(lambda: len(self.started) >= count)


async def test_updates_are_handed_over_one_at_a_time_in_the_order_sent(
    fake: FakeTelegram,
) -> None:
    events = GatedEvents()
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        first = fake.message(GROUP, ALICE, "first")
        await fake.deliver(first)
        await fake.deliver(fake.message(GROUP, BOB, "second"))
        await fake.deliver(fake.message(private_chat(BOB), BOB, "elsewhere"))

        await events.wait_started(1)
        await asyncio.sleep(0.2)  # room for a wrong implementation to hand over more
        assert events.started == ["first"]
        assert all(offset is None or offset <= first["update_id"] for offset in fake.offsets)

        events.release.set()
        await events.wait_started(3)
        assert events.started == ["first", "second", "elsewhere"]
    finally:
        events.release.set()
        await channel.stop()
