"""The store's pooled PostgreSQL connections: plain asyncpg connections, taken and given back
without a task or a round trip, and the failures that mean the database is away.

A plain turn runs about fifteen operations, each on a connection taken from the pool and given
back. asyncpg's own pool cost about 265 Python calls and 140 us for that, measured here, more
than the statement itself (a task to wait for a free connection with a timeout, another to
shield the release, a reset query on release unless told otherwise). This one is a stack of
idle connections: taking one pops it, giving it back pushes it.

An idle connection the server dropped (a restart, `pg_terminate_backend`) is closed on asyncpg's
side as soon as the loop reads the end of its socket, and is skipped when taken. One that sat
idle longer than `IDLE_PING_AFTER` is pinged first (`PING`, one round trip), so a connection cut
without a word while nothing ran (a proxy's cut) is noticed before a turn uses it; if it does
not answer, every idle connection (as old as it) is closed and a new one opened. A connection
dropped within that moment fails its statement instead, which the store reports as unavailable
like any outage (the turn is not acknowledged, or stays open to be taken again).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from asyncpg.exceptions import AdminShutdownError, CannotConnectNowError, CrashShutdownError
from sqlalchemy.engine import URL

from threadline.backends.sql.idle_ping import IDLE_PING_AFTER

# Failures that mean "the database is not there right now" (the connection or the server went
# away, the server is shutting down or starting up), as opposed to a statement it refused.
DATABASE_AWAY = (
    OSError, TimeoutError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError,
    AdminShutdownError, CrashShutdownError, CannotConnectNowError)

Connect = Callable[[], Awaitable[asyncpg.Connection]]
# What a connection that sat idle is asked before it is used (asyncpg's simple protocol: one
# round trip, nothing prepared).
PING = "SELECT 1"


class ConnectionPool:
    """Up to `size` asyncpg connections opened by `connect`, the most recently used taken first.

    A task that finds every connection taken waits up to `timeout` seconds for one to be given
    back, then fails with `TimeoutError` (as SQLAlchemy's pool did with its `pool_timeout`).
    """

    def __init__(self, connect: Connect, *, size: int, timeout: float,
                 ping_after: float = IDLE_PING_AFTER) -> None:
        self._connect = connect
        self._size = size
        self._timeout = timeout
        self._ping_after = ping_after
        self._idle: list[tuple[asyncpg.Connection, float]] = []  # with when each was given back
        self._opened = 0  # idle, taken, or being opened
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._closed = False

    async def take(self) -> asyncpg.Connection:
        """An open connection, for the caller alone until it gives it back."""
        while True:
            while self._idle:
                connection, given_back = self._idle.pop()
                if connection.is_closed():
                    self._opened -= 1
                elif (time.monotonic() - given_back < self._ping_after
                      or await self._answers(connection)):
                    return connection
            if self._closed:
                raise asyncpg.InterfaceError("the store's connection pool is closed")
            if self._opened < self._size:
                return await self._open()
            await self._wait_for_one()

    async def _open(self) -> asyncpg.Connection:
        self._opened += 1
        try:
            return await self._connect()
        except BaseException:
            self._opened -= 1
            self._wake_one()
            raise

    async def _answers(self, connection: asyncpg.Connection) -> bool:
        """Whether an idle connection still answers; if not, it and every other idle one are
        closed (what dropped it, a restart or a cut, dropped them too)."""
        try:
            await connection.execute(PING)
        except Exception:
            for dropped in [connection, *(idle for idle, _ in self._idle)]:
                dropped.terminate()
            self._opened -= 1 + len(self._idle)
            self._idle.clear()
            return False
        return True

    async def _wait_for_one(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(self._timeout):
                await waiter
        except TimeoutError:
            raise TimeoutError(
                f"no database connection was free within {self._timeout} s "
                f"({self._size} in use)") from None
        finally:
            if waiter in self._waiting:
                self._waiting.remove(waiter)

    def give_back(self, connection: asyncpg.Connection) -> None:
        """Return a connection taken with `take`. One that is closed, or still in a transaction
        (its rollback failed), is dropped; one whose statement was cancelled is kept (asyncpg
        waits for the cancellation before its next statement)."""
        if self._closed or connection.is_closed() or connection.is_in_transaction():
            self._opened -= 1
            connection.terminate()
        else:
            self._idle.append((connection, time.monotonic()))
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def close(self) -> None:
        """Close the idle connections; those still taken are closed when given back."""
        self._closed = True
        idle, self._idle = self._idle, []
        self._opened -= len(idle)
        await asyncio.gather(*(connection.close(timeout=2) for connection, _ in idle),
                             return_exceptions=True)
        for connection, _ in idle:
            connection.terminate()  # one whose graceful close timed out
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # it finds the pool closed


def connection_pool(url: URL, *, size: int, timeout: float,
                    connect_args: dict[str, Any]) -> ConnectionPool:
    """A pool of connections to `url` made as SQLAlchemy's engine makes its own (the URL's
    host, port, user, password, database and options, read by its asyncpg dialect), with
    `connect_args` (`asyncpg.connect`'s) on top; `timeout` also bounds a wait for one."""
    dialect = url.set(drivername="postgresql+asyncpg").get_dialect()()
    args, options = dialect.create_connect_args(url)
    if "prepared_statement_cache_size" in options:  # the dialect's name for asyncpg's own
        options["statement_cache_size"] = options.pop("prepared_statement_cache_size")
    options.update(connect_args)

    async def connect() -> asyncpg.Connection:
        return await asyncpg.connect(*args, **options)

    return ConnectionPool(connect, size=size, timeout=timeout)
