"""Two worker processes on one PostgreSQL database answer a conversation one turn at a time.

Each "process" is a Team with its own store connection pool and its own
`PostgresConversationLock`, so the only things they share are PostgreSQL's inbox tables and its
advisory locks.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.interceptors.scripted import ANN, BOB, ScriptedModel, last_user_text, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.locks import PostgresConversationLock
from threadline.errors import ConfigError
from threadline.team import Team

pytestmark = pytest.mark.postgres


async def test_a_conversation_owned_by_one_worker_is_answered_there_in_order(
        pg_url: str) -> None:
    release = asyncio.Event()
    first_inside = asyncio.Event()

    async def answer(request: ModelRequest) -> ModelResponse:
        asked = last_user_text(request).splitlines()[-1]
        if asked.endswith("one"):
            first_inside.set()
            await release.wait()
        return ModelResponse(text=f"answer to {asked.split()[-1]}")

    locks = [PostgresConversationLock(pg_url), PostgresConversationLock(pg_url)]
    async with SqlConversationStore(pg_url) as store_a, SqlConversationStore(pg_url) as store_b:
        model_a, model_b = ScriptedModel(answer), ScriptedModel(answer)
        worker_a = Team([Agent(name="support", conversation_history=store_a,
                               provider=model_a)], lock=locks[0])
        worker_b = Team([Agent(name="support", conversation_history=store_b,
                               provider=model_b)], lock=locks[1])

        first = asyncio.create_task(worker_a.handle(say("@support one", who=ANN,
                                                        conversation_id="c1")))
        await first_inside.wait()
        # B records the next turn of c1 while A owns c1; it cannot answer it.
        assert await worker_b.pipeline.receive(say("@support two", who=BOB,
                                                   conversation_id="c1"), None)
        # Another conversation is not held up by c1 in either worker.
        other = await worker_b.handle(say("@support elsewhere", conversation_id="c2"))
        assert [r.output for r in other] == ["answer to elsewhere"]

        release.set()
        await first
        for _ in range(200):  # worker A answers "two" too: it owns c1
            if len(await store_a.get("c1")) == 4:
                break
            await asyncio.sleep(0.05)
        stored = [m.content for m in await store_a.get("c1")]
        assert stored == ["@support one", "answer to one", "@support two", "answer to two"]
        # Whoever answered "two" saw the answer to "one" in its prompt.
        asked_two = [r for r in model_a.requests + model_b.requests
                     if last_user_text(r).endswith("two")]
        assert len(asked_two) == 1
        assert "answer to one" in "\n".join(m.content for m in asked_two[0].messages)
        await worker_a.stop()
        await worker_b.stop()
    for lock in locks:
        await lock.close()


def test_the_postgres_lock_refuses_a_sqlite_url() -> None:
    with pytest.raises(ConfigError, match="needs a PostgreSQL URL"):
        PostgresConversationLock("sqlite+aiosqlite:///threadline.db")
