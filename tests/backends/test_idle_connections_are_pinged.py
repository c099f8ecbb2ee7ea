"""A pooled PostgreSQL connection is pinged when it sat idle, not each time it is taken.

The ping (BEGIN, `;`, ROLLBACK on asyncpg) cost three round trips before every statement of a
turn; a connection given back a moment ago is used as it is. One that sat idle is pinged, and
a connection the server dropped meanwhile (a restart, a proxy's cut) is replaced before the
statement runs, as the pool's pre-ping did.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tests.conftest import pg_url_or_skip
from threadline.backends.sql.idle_ping import ping_when_idle

pytestmark = pytest.mark.postgres

IDLE = 0.3


def pinging_engine(pings: list[Any]) -> AsyncEngine:
    engine = create_async_engine(make_url(pg_url_or_skip()), pool_size=1, max_overflow=0)
    dialect = engine.sync_engine.dialect
    ping = dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return ping(dbapi_connection)

    dialect.do_ping = counted  # type: ignore[method-assign]
    ping_when_idle(engine, after=IDLE)
    return engine


async def backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_a_connection_used_a_moment_ago_is_not_pinged() -> None:
    pings: list[Any] = []
    engine = pinging_engine(pings)
    try:
        first = await backend_pid(engine)
        assert [await backend_pid(engine) for _ in range(5)] == [first] * 5
        assert pings == []
        await asyncio.sleep(IDLE * 2)
        assert await backend_pid(engine) == first
        assert len(pings) == 1
    finally:
        await engine.dispose()


async def test_an_idle_connection_the_server_dropped_is_replaced_before_use() -> None:
    pings: list[Any] = []
    engine = pinging_engine(pings)
    try:
        dropped = await backend_pid(engine)
        async with create_async_engine(make_url(pg_url_or_skip())).connect() as other:
            await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": dropped})
        await asyncio.sleep(IDLE * 2)
        assert await backend_pid(engine) != dropped  # no error: replaced at checkout
        assert len(pings) == 1
    finally:
        await engine.dispose()
