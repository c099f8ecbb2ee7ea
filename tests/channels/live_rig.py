"""A team answering on a real channel with a real Anthropic client, for live-reply scenarios.

One agent, `support`, answers every message (respond_to_all) through `AnthropicProvider` on the
fake Anthropic server, with the runtime's friendly error replies; the channel is whichever the
test started against its platform's fake. Stopping the team drains the turn in flight, so what
the store holds afterwards is final.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic
from threadline.agents import Agent
from threadline.agents.agent import Answering
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.base import Channel
from threadline.history.model import StoredMessage
from threadline.interceptors.error_reply import TEMPLATE, ErrorReplyInterceptor
from threadline.team import Team

UNAVAILABLE_APOLOGY = TEMPLATE.format(reason="the model is unavailable")


def words(count: int, *, start: int = 0) -> str:
    """A reply of `count` distinct words (so any cut-off or repetition shows)."""
    return " ".join(f"word{n}" for n in range(start, start + count)) + "."


def sqlite_store_fixture() -> Callable[[str], AsyncIterator[SqlConversationStore]]:
    """A pytest fixture opening a store on the test's SQLite file: `store = sqlite_store_fixture()`
    (it stays open after the team stops, for reading what was stored)."""

    @pytest.fixture
    async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
        async with SqlConversationStore(sqlite_url) as opened:
            yield opened

    return store


@asynccontextmanager
async def live_team(store: SqlConversationStore, channel: Channel, anthropic: FakeAnthropic, *,
                    tools: Sequence[Any] = (), agent_timeout: float = 30.0,
                    friendly_errors: bool = True) -> AsyncIterator[Team]:
    """The team, started on `channel`; leaving the block stops it (the store stays open).

    `friendly_errors=False` leaves out the error replies, so a failing turn raises."""
    interceptors = [ErrorReplyInterceptor()] if friendly_errors else []
    agent = Agent(name="support", conversation_history=store,
                  provider=AnthropicProvider(anthropic.client()), interceptors=interceptors,
                  tools=tools, answering=Answering(timeout=agent_timeout))
    team = Team([agent], respond_to_all=True)
    team.attach(channel, respond_to_all=True)
    await team.start()
    try:
        yield team
    finally:
        await team.stop()


async def replies_in(store: SqlConversationStore, conversation_id: str) -> list[StoredMessage]:
    """The agent's stored turns in a conversation."""
    return [m for m in await store.get(conversation_id) if m.participant.kind == "agent"]


def same_words(text: str, expected: str) -> bool:
    """Equal up to the whitespace a split between messages removes."""
    return re.findall(r"\S+", text) == re.findall(r"\S+", expected)
