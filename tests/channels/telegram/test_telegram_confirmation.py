"""Telegram is told an update arrived (a getUpdates offset past it, a webhook 200) only once
its turn is recorded: an update that was not recorded, or was in hand when the process died,
is delivered again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, GROUP, FakeTelegram
from tests.ports import free_port
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.channels.telegram import TelegramChannel
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore


class WatchedEvents(RecordingEvents):
    """Notes every `on_message` call with the offsets Telegram had been sent by then, and
    can hold one message (by content) until `release` is set."""

    def __init__(self, store: ConversationStore, *, hold: str | None = None) -> None:
        super().__init__(store, reply=lambda m: None)
        self.fake: FakeTelegram | None = None
        self.calls: list[tuple[str, list[int | None]]] = []
        self.hold, self.holding, self.release = hold, asyncio.Event(), asyncio.Event()

    async def on_message(self, message: StoredMessage, channel: Channel) -> None:
        assert self.fake is not None
        self.calls.append((message.content, list(self.fake.offsets)))
        if message.content == self.hold:
            self.holding.set()
            await self.release.wait()
        await super().on_message(message, channel)


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as opened:
        yield opened


def watched(fake: FakeTelegram, store: ConversationStore, *, hold: str | None = None
            ) -> WatchedEvents:
    events = WatchedEvents(store, hold=hold)
    events.fake = fake
    return events


async def test_an_update_that_was_not_recorded_is_not_confirmed_and_comes_again(
    fake: FakeTelegram, store: SqlConversationStore,
) -> None:
    events = watched(fake, store)
    refusals: list[str] = []

    def store_down_once(message: StoredMessage) -> bool:
        if message.content == "second" and not refusals:
            refusals.append(message.id)
            return True
        return False

    events.refuse = store_down_once
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        updates = [fake.message(GROUP, ALICE, text) for text in ("first", "second", "third")]
        for update in updates:
            await fake.deliver(update)
        for _ in updates:
            await events.next_inbound()
    finally:
        await channel.stop()

    second_id = updates[1]["update_id"]
    assert [content for content, _ in events.calls] == ["first", "second", "second", "third"]
    # Until "second" was recorded, no offset told Telegram to forget it.
    _, offsets_when_recorded = events.calls[2]
    assert all(offset is None or offset <= second_id for offset in offsets_when_recorded)
    assert [m.content for m in await store.get(f"telegram:{GROUP.id}")] == [
        "first", "second", "third"]
    assert fake.pending_updates == []  # stop() confirmed what was recorded


async def test_after_a_crash_every_unconfirmed_update_comes_again(
    fake: FakeTelegram, store: SqlConversationStore,
) -> None:
    crashed_events = watched(fake, store, hold="second")
    crashed = TelegramChannel(name="tg", **fake.channel_settings())
    await crashed.start(crashed_events)
    updates = [fake.message(GROUP, ALICE, text) for text in ("first", "second", "third")]
    for update in updates:
        await fake.deliver(update)
    await crashed_events.next_inbound()  # "first" is recorded...
    async with asyncio.timeout(5.0):
        await crashed_events.holding.wait()  # ... and the process dies while recording "second"

    # The dead process never polls again; a new one starts on the same token and store.
    events = watched(fake, store)
    restarted = TelegramChannel(name="tg", **fake.channel_settings())
    await restarted.start(events)
    try:
        assert (await events.next_inbound()).content == "second"
        assert (await events.next_inbound()).content == "third"
    finally:
        await restarted.stop()
        crashed_events.release.set()
        await crashed.stop()

    assert [content for content, _ in events.calls] == ["first", "second", "third"]
    assert [m.content for m in await store.get(f"telegram:{GROUP.id}")] == [
        "first", "second", "third"]
    assert fake.pending_updates == []


async def test_a_webhook_update_that_was_not_recorded_gets_503_and_its_retry_200(
    fake: FakeTelegram, store: SqlConversationStore,
) -> None:
    events = watched(fake, store)
    events.refuse = lambda message: True  # the store is down
    port = free_port()
    channel = TelegramChannel(
        name="tg", **fake.channel_settings(), mode="webhook", webhook_port=port,
        webhook_url=f"http://127.0.0.1:{port}/telegram", webhook_secret_token="s3cret",
    )
    await channel.start(events)
    try:
        update = fake.message(GROUP, ALICE, "@support_bot hello?")
        refused = await fake.deliver(update)
        events.refuse = lambda message: False  # and back
        retried = await fake.deliver(update)
        stored = await events.next_inbound()
        async with aiohttp.ClientSession() as session, session.post(
                f"http://127.0.0.1:{port}/telegram", data=b"{not json",
                headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"}) as response:
            malformed = response.status
    finally:
        await channel.stop()

    assert (refused, retried, malformed) == ([503], [200], 400)
    assert stored.content == "@support_bot hello?"
    assert await store.count() == 1
