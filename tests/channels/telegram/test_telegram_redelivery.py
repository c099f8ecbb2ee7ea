"""An update Telegram delivers twice is one turn and one reply; a restart replays nothing.

The channel hands every delivery over; the receiver (the inbox) drops copies by turn id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, GROUP, FakeTelegram
from tests.ports import free_port
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.channels.telegram import TelegramChannel
from threadline.history.model import StoredMessage

SECRET = "s3cret-token_for-tests"


class CountingEvents(RecordingEvents):
    """Counts every `on_message` call, before the store's own dedup can hide a duplicate."""

    def __init__(self, store: SqlConversationStore) -> None:
        super().__init__(store)
        self.delivered: list[str] = []

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        self.delivered.append(message.id)
        await super().on_message(message, channel)


@pytest.fixture
async def events(sqlite_url: str) -> AsyncIterator[CountingEvents]:
    async with SqlConversationStore(sqlite_url) as store:
        yield CountingEvents(store)


async def test_duplicate_update_by_polling_is_one_turn_one_reply(
    fake: FakeTelegram, events: CountingEvents
) -> None:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot once"), times=2)
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot after"))

        first = await events.next_inbound()
        after = await events.next_inbound()
        await fake.wait_for_calls("sendMessage", 2)
    finally:
        await channel.stop()  # waits for in-flight handlers: nothing more can arrive

    assert events.delivered == [first.id, first.id, after.id]
    assert [first.content, after.content] == ["@support_bot once", "@support_bot after"]
    assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
        "echo: @support_bot once", "echo: @support_bot after"]
    assert await events.store.count(first.conversation_id) == 2


async def test_duplicate_update_by_webhook_is_one_turn_one_reply(
    fake: FakeTelegram, events: CountingEvents
) -> None:
    port = free_port()
    channel = TelegramChannel(
        name="tg", **fake.channel_settings(), mode="webhook", webhook_listen="127.0.0.1",
        webhook_port=port, webhook_path="/tg", webhook_url=f"http://127.0.0.1:{port}/tg",
        webhook_secret_token=SECRET,
    )
    await channel.start(events)
    try:
        statuses = await fake.deliver(fake.message(GROUP, ALICE, "@support_bot hook"), times=2)
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot later"))

        first = await events.next_inbound()
        later = await events.next_inbound()
        await events.drain()
    finally:
        await channel.stop()

    assert statuses == [200, 200]
    assert fake.calls_to("setWebhook")[0].params["secret_token"] == SECRET
    assert events.delivered == [first.id, first.id, later.id]
    assert [first.content, later.content] == ["@support_bot hook", "@support_bot later"]
    assert len(fake.calls_to("sendMessage")) == 2
    assert await events.store.count(first.conversation_id) == 2


async def test_restart_does_not_replay_handled_updates(
    fake: FakeTelegram, events: CountingEvents
) -> None:
    first_run = TelegramChannel(name="tg", **fake.channel_settings())
    await first_run.start(events)
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot before restart"))
    await events.next_inbound()
    await events.drain()
    await first_run.stop()
    assert fake.pending_updates == []  # the offset was confirmed on stop

    second_run = TelegramChannel(name="tg", **fake.channel_settings())
    await second_run.start(events)
    try:
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot after restart"))
        after = await events.next_inbound()
        await events.drain()
    finally:
        await second_run.stop()

    assert after.content == "@support_bot after restart"
    assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
        "echo: @support_bot before restart", "echo: @support_bot after restart"]


async def test_drop_pending_updates_discards_what_queued_while_stopped(
    fake: FakeTelegram, events: CountingEvents
) -> None:
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot while down"))
    channel = TelegramChannel(name="tg", **fake.channel_settings(), drop_pending_updates=True)
    await channel.start(events)
    try:
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot now"))
        now = await events.next_inbound()
    finally:
        await channel.stop()

    assert now.content == "@support_bot now"
    assert fake.calls_to("deleteWebhook")[0].params["drop_pending_updates"] is True
    assert await events.store.count() == 1
