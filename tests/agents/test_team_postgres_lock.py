"""Two worker processes on one PostgreSQL database still answer a conversation one turn at a time.

Each "process" is a Team with its own store connection pool and its own
`PostgresConversationLock`, so the only thing serializing them is PostgreSQL's advisory lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.interceptors.scripted import ANN, BOB, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.agents.team import Team
from threadline.errors import ConfigError
from threadline.history import SqlConversationStore
from threadline.locks import PostgresConversationLock

pytestmark = pytest.mark.postgres


class SignallingLock(PostgresConversationLock):
    """The real lock, announcing when a worker starts asking PostgreSQL for a conversation."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.asking = asyncio.Event()

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        if conversation_id == "c1":
            self.asking.set()
        async with super().hold(conversation_id):
            yield


async def test_a_conversation_held_by_one_worker_waits_in_the_other(pg_url: str) -> None:
    release = asyncio.Event()
    first_inside = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        first_inside.set()
        await release.wait()
        return ModelResponse(text="first answer")

    locks = [PostgresConversationLock(pg_url), SignallingLock(pg_url)]
    async with SqlConversationStore(pg_url) as store_a, SqlConversationStore(pg_url) as store_b:
        worker_a = Team([Agent(name="support", conversation_history=store_a,
                               provider=ScriptedModel(slow))], lock=locks[0])
        model_b = ScriptedModel(lambda r: ModelResponse(text="second answer"))
        worker_b = Team([Agent(name="support", conversation_history=store_b,
                               provider=model_b)], lock=locks[1])

        first = asyncio.create_task(worker_a.handle(say("@support one", who=ANN,
                                                        conversation_id="c1")))
        await first_inside.wait()
        second = asyncio.create_task(worker_b.handle(say("@support two", who=BOB,
                                                         conversation_id="c1")))
        async with asyncio.timeout(10):
            await locks[1].asking.wait()
        # Another conversation is not held up by c1 in either worker.
        other = await worker_b.handle(say("@support elsewhere", conversation_id="c2"))
        assert [r.output for r in other] == ["second answer"]
        assert not second.done() and len(model_b.requests) == 1

        release.set()
        await first
        await second
        stored = [m.content for m in await store_a.get("c1")]
        assert stored == ["@support one", "first answer", "@support two", "second answer"]
        # Worker B's prompt already held worker A's finished turn.
        assert "first answer" in model_b.requests[-1].messages[-2].content
        await worker_a.stop()
        await worker_b.stop()
    for lock in locks:
        await lock.close()


def test_the_postgres_lock_refuses_a_sqlite_url() -> None:
    with pytest.raises(ConfigError, match="needs a PostgreSQL URL"):
        PostgresConversationLock("sqlite+aiosqlite:///threadline.db")
