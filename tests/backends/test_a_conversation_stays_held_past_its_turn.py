"""A PostgreSQL worker keeps a conversation a moment past its turns (the next turn of a lively
chat skips the lock and unlock), and never so long that a turn another worker recorded waits.

Each "process" is a Team with its own store pool and its own `PostgresConversationLock`, so
what they share is PostgreSQL's inbox tables and its advisory locks.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.interceptors.scripted import ScriptedModel, last_user_text, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.locks import PostgresConversationLock, advisory_key
from threadline.team import Team

pytestmark = pytest.mark.postgres


def worker(store: SqlConversationStore, lock: PostgresConversationLock, *,
           scan_interval: float, model: ScriptedModel | None = None) -> Team:
    return Team([Agent(name="support", conversation_history=store,
                       provider=model or ScriptedModel())],
                lock=lock, scan_interval=scan_interval)


async def test_a_turn_another_worker_records_is_answered_there_while_one_lingers(
        pg_url: str) -> None:
    locks = [PostgresConversationLock(pg_url), PostgresConversationLock(pg_url)]
    async with SqlConversationStore(pg_url) as store_a, SqlConversationStore(pg_url) as store_b:
        # A never scans for waiting turns: a turn B records is B's to answer.
        worker_a = worker(store_a, locks[0], scan_interval=3600)
        worker_b = worker(store_b, locks[1], scan_interval=0.5)
        await worker_a.handle(say("@support one", conversation_id="c1"))
        # A still holds c1 for a moment; B's second look (or its scan) comes after that
        # moment, so B answers the turn it recorded (held for good, it would wait forever).
        async with asyncio.timeout(10):
            answered = await worker_b.handle(say("@support two", conversation_id="c1"))
        assert [r.output for r in answered] == ["re: Ann: @support two"]
        assert [m.content for m in await store_a.get("c1")] == [
            "@support one", "re: Ann: @support one", "@support two", "re: Ann: @support two"]
        await worker_a.stop()
        await worker_b.stop()
    for lock in locks:
        await lock.close()


async def test_a_worker_whose_held_connection_died_holds_nothing(pg_url: str) -> None:
    dsn = pg_url.split("?")[0].replace("postgresql+asyncpg://", "postgresql://")
    locks = [PostgresConversationLock(pg_url, linger=3600),
             PostgresConversationLock(pg_url, linger=3600)]
    async with SqlConversationStore(pg_url) as store_a, SqlConversationStore(pg_url) as store_b:
        model_a, model_b = ScriptedModel(), ScriptedModel()
        worker_a = worker(store_a, locks[0], scan_interval=3600, model=model_a)
        worker_b = worker(store_b, locks[1], scan_interval=0.2, model=model_b)
        await worker_a.handle(say("@support one", conversation_id="c1"))
        # The server drops A's lock connection (as when A's process dies): the lock goes too.
        # Only the connection holding c1's key in this test's schema: tests running beside
        # this one hold advisory locks of their own.
        key = advisory_key("c1", pg_url.rsplit("search_path=", 1)[-1]) & 0xFFFFFFFFFFFFFFFF
        admin = await asyncpg.connect(dsn)
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND granted AND classid = $1 AND objid = $2 AND objsubid = 1",
                key >> 32, key & 0xFFFFFFFF)
        finally:
            await admin.close()
        async with asyncio.timeout(10):
            answered = await worker_b.handle(say("@support two", conversation_id="c1"))
            assert [r.output for r in answered] == ["re: Ann: @support two"]
            # B holds c1 now. A records a turn of it: A's held connection is dead, so A
            # does not answer it; B, the owner, finds it.
            assert await worker_a.pipeline.receive(say("@support three",
                                                       conversation_id="c1"), None)
            while len(await store_b.get("c1")) < 6:  # noqa: ASYNC110 - polls a database
                await asyncio.sleep(0.05)
        asked = [[last_user_text(r).splitlines()[-1] for r in model.requests]
                 for model in (model_a, model_b)]
        assert asked == [["Ann: @support one"], ["Ann: @support two", "Ann: @support three"]]
        await worker_a.stop()
        await worker_b.stop()
    for lock in locks:
        await lock.close()
