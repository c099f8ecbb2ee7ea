"""When every connection of the store's pool (`pg_pool`) is taken, the next taker waits for
one given back, and gives up after the pool's timeout rather than waiting forever."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy import make_url

from tests.conftest import pg_url_or_skip
from threadline.backends.sql.pg_pool import ConnectionPool, connection_pool

pytestmark = pytest.mark.postgres


def one_connection_pool(timeout: float) -> ConnectionPool:
    return connection_pool(make_url(pg_url_or_skip()), size=1, timeout=timeout,
                           connect_args={"timeout": 5})


async def test_a_taker_gets_the_connection_given_back() -> None:
    pool = one_connection_pool(timeout=30)
    try:
        first = await pool.take()
        waiting = asyncio.ensure_future(pool.take())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # size 1: no second connection is opened
        pool.give_back(first)
        assert await waiting is first
        pool.give_back(first)
    finally:
        await pool.close()


async def test_a_taker_gives_up_after_the_timeout() -> None:
    pool = one_connection_pool(timeout=0.2)
    try:
        first = await pool.take()
        with pytest.raises(TimeoutError, match="no database connection was free"):
            await pool.take()
        pool.give_back(first)
        again = await pool.take()  # the pool is whole after a taker gave up
        assert again is first
        pool.give_back(again)
    finally:
        await pool.close()


async def test_a_closed_pool_closes_what_is_given_back() -> None:
    pool = one_connection_pool(timeout=5)
    taken: asyncpg.Connection = await pool.take()
    await pool.close()
    pool.give_back(taken)
    assert taken.is_closed()
    with pytest.raises(asyncpg.InterfaceError, match="closed"):
        await pool.take()
