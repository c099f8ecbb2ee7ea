"""The store's pooled PostgreSQL connections that the server dropped while they sat idle (a
restart, `pg_terminate_backend`, an idle timeout) do not fail the next turn: the pool skips
them and opens new ones."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.operations import SqlRunner, durable_later
from threadline.team import Team

pytestmark = pytest.mark.postgres


def _pid(conn: SqlRunner) -> int:
    return int(conn.rows("SELECT pg_backend_pid(), pg_sleep(0.05)", {})[0][0])


@durable_later
def _pid_unwaited(conn: SqlRunner) -> int:
    return _pid(conn)


async def test_a_turn_after_the_server_dropped_every_idle_connection(pg_url: str) -> None:
    async with SqlConversationStore(pg_url) as store:
        team = Team([Agent(name="support", conversation_history=store,
                           provider=ScriptedModel())], scan_interval=3600)
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        await team.handle(say("@support one", conversation_id="c1"), channel)
        # Several connections of each pool, all idle again once these return.
        pids = set(await asyncio.gather(
            *(store.run("read its pid", _pid) for _ in range(3)),
            *(store.run("write its pid", _pid_unwaited, write=True) for _ in range(3))))
        admin = await asyncpg.connect(pg_url.split("?")[0].replace("+asyncpg", ""))
        try:
            # Each waits (up to 5 s) until its backend has exited.
            await admin.execute("SELECT pg_terminate_backend(pid, 5000) FROM "
                                "unnest($1::int[]) AS pid", list(pids))
        finally:
            await admin.close()
        await asyncio.sleep(0.1)  # the loop reads the end of each dropped socket

        answered = await team.handle(say("@support two", conversation_id="c1"), channel)

        assert [r.output for r in answered] == ["re: Ann: @support two"]
        assert not pids & set(await asyncio.gather(
            store.run("read its pid", _pid), store.run("write its pid", _pid_unwaited,
                                                        write=True)))
        await team.stop()
