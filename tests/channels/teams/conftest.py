"""A fake Teams per test, its login server's CA trusted by the bot's token requests (MSAL
speaks only https, through `requests`, which reads REQUESTS_CA_BUNDLE)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.teams import FakeTeams


@pytest.fixture
async def teams(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeTeams]:
    async with FakeTeams() as fake:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(fake.ca_file))
        yield fake
