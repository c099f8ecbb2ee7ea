"""Fixtures of the WhatsApp channel tests: the fake Cloud API, a store, a started channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.whatsapp import Customer, FakeWhatsApp
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel

ANA = Customer("34600111222", "Ana")
BO = Customer("4915112345678", "Bo")


@pytest.fixture
async def fake() -> AsyncIterator[FakeWhatsApp]:
    async with FakeWhatsApp() as server:
        yield server


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as opened:
        yield opened


@pytest.fixture
def events(store: SqlConversationStore) -> RecordingEvents:
    return RecordingEvents(store)


@pytest.fixture
async def channel(fake: FakeWhatsApp, events: RecordingEvents,
                  store: SqlConversationStore) -> AsyncIterator[WhatsAppChannel]:
    channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                              history=store)
    await channel.start(events)
    yield channel
    await channel.stop()


def url_of(channel: WhatsAppChannel) -> str:
    assert channel.webhook_url is not None
    return channel.webhook_url
