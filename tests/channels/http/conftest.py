"""The `http` channel's tests: a real team on a SQLite file, the channel on a free port of
127.0.0.1, and the fake caller (`tests.fakes.http_caller`) signing requests and taking replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.http_caller import FakeCaller
from tests.interceptors.scripted import ScriptedModel
from threadline.agents import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.http_replies import SqlReplyOutbox
from threadline.channels.http.callback import CallbackPolicy
from threadline.channels.http.channel import HttpChannel
from threadline.team import Team

SECRET = "a-test-secret-of-32-characters!!"


@dataclass
class Rig:
    """A started team answering on an `http` channel, and the caller talking to it."""

    store: SqlConversationStore
    channel: HttpChannel
    caller: FakeCaller
    outbox: SqlReplyOutbox


@pytest.fixture
async def caller() -> AsyncIterator[FakeCaller]:
    async with FakeCaller(SECRET) as fake:
        yield fake


@pytest.fixture
async def rig(sqlite_url: str, caller: FakeCaller) -> AsyncIterator[Rig]:
    async with SqlConversationStore(sqlite_url) as store:
        outbox = SqlReplyOutbox(store)
        channel = HttpChannel(
            name="api", secret=SECRET, outbox=outbox, max_body_bytes=4096, max_text_chars=500,
            callback=CallbackPolicy(url=caller.callback_url, secret=SECRET,
                                    timeout_seconds=2, retry_initial_seconds=0.05,
                                    retry_max_seconds=0.2, poll_seconds=0.05))
        team = Team([Agent(name=name, conversation_history=store, provider=ScriptedModel())
                     for name in ("support", "billing")])
        team.attach(channel)
        await team.start()
        try:
            yield Rig(store=store, channel=channel, caller=caller, outbox=outbox)
        finally:
            await team.stop()
