"""A pooled PostgreSQL connection is pinged when it sat idle, not each time it is taken: in
SQLAlchemy's engine (`idle_ping`, what libraries are given) and in the store's and the lock's
own pools (`pg_pool`).

The ping (BEGIN, `;`, ROLLBACK on asyncpg through SQLAlchemy) cost three round trips before
every statement of a turn; a connection given back a moment ago is used as it is. One that sat
idle is pinged, and a connection the server dropped meanwhile (a restart, a proxy's cut) is
replaced before the statement runs, as the pool's pre-ping did.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tests.conftest import pg_url_or_skip
from tests.fakes.tcp_proxy import TcpProxy
from threadline.backends.sql.idle_ping import ping_when_idle
from threadline.backends.sql.pg_pool import PING, ConnectionPool

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


async def logged_pool(sent: list[str], url: str | None = None, *,
                      command_timeout: float = 60) -> ConnectionPool:
    """The store's kind of pool (`pg_pool`), each statement its connections send in `sent`."""
    dsn = make_url(url or pg_url_or_skip()).set(drivername="postgresql").render_as_string(
        hide_password=False)

    async def connect() -> asyncpg.Connection:
        connection = await asyncpg.connect(dsn, command_timeout=command_timeout)
        connection.add_query_logger(lambda query: sent.append(query.query))
        return connection

    return ConnectionPool(connect, size=1, timeout=5, ping_after=IDLE)


async def store_pid(pool: ConnectionPool) -> int:
    connection = await pool.take()
    try:
        return int(await connection.fetchval("SELECT pg_backend_pid()"))
    finally:
        pool.give_back(connection)


async def test_a_pooled_connection_is_pinged_only_after_it_sat_idle() -> None:
    sent: list[str] = []
    pool = await logged_pool(sent)
    try:
        first = await store_pid(pool)
        assert [await store_pid(pool) for _ in range(5)] == [first] * 5
        await asyncio.sleep(IDLE * 2)
        assert await store_pid(pool) == first
        assert sent.count(PING) == 1  # the ping, once: after the pause
    finally:
        await pool.close()


async def test_an_idle_pooled_connection_cut_without_a_word_is_replaced() -> None:
    url = make_url(pg_url_or_skip())
    proxy = TcpProxy(url.port or 5432)
    await proxy.start()
    sent: list[str] = []
    pool = await logged_pool(sent, url.set(port=proxy.port).render_as_string(
        hide_password=False), command_timeout=0.5)
    try:
        cut = await store_pid(pool)
        proxy.freeze()  # that connection stays open and carries nothing
        await asyncio.sleep(IDLE * 2)
        assert await store_pid(pool) != cut  # its ping timed out; a new one answered
        assert sent.count(PING) == 1
    finally:
        await pool.close()
        await proxy.stop()
