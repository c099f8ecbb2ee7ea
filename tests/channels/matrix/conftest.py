"""Fixtures of the Matrix channel tests: the fake homeserver, a store, and a started channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.matrix.rig import matrix_channel
from tests.channels.recording import RecordingEvents
from tests.fakes.matrix import FakeMatrix
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix import MatrixChannel


@pytest.fixture
async def fake() -> AsyncIterator[FakeMatrix]:
    async with FakeMatrix() as server:
        yield server


@pytest.fixture
async def events(sqlite_url: str) -> AsyncIterator[RecordingEvents]:
    async with SqlConversationStore(sqlite_url) as store:
        yield RecordingEvents(store)


@pytest.fixture
async def channel(fake: FakeMatrix, events: RecordingEvents) -> AsyncIterator[MatrixChannel]:
    assert isinstance(events.store, SqlConversationStore)
    channel = matrix_channel(fake, events.store, auto_join=["fake.test"])
    await channel.start(events)
    yield channel
    await channel.stop()
