"""Fixtures of the Telegram channel tests: the fake Bot API, a store, and a started channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import FakeTelegram
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
async def events(sqlite_url: str) -> AsyncIterator[RecordingEvents]:
    async with SqlConversationStore(sqlite_url) as store:
        yield RecordingEvents(store)


@pytest.fixture
async def channel(fake: FakeTelegram, events: RecordingEvents) -> AsyncIterator[TelegramChannel]:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    yield channel
    await channel.stop()
