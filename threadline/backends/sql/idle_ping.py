"""Pinging a pooled PostgreSQL connection of a SQLAlchemy engine only when it sat idle, not at
every checkout: the engine a store gives to libraries (`alchemy_engine`); the store's and the
conversation lock's own connections do the same in `pg_pool`.

SQLAlchemy's `pool_pre_ping` pings each time a connection leaves the pool, and asyncpg's ping
outside a transaction is BEGIN, `;` and ROLLBACK: three round trips before each of a plain
turn's twelve statements, more than the turn's own. A connection given back a moment ago
answered then; one that sat in the pool longer than `IDLE_PING_AFTER` is pinged as before, so
a database restarted (or a connection cut by a proxy) while nothing ran is noticed before a
turn uses it, and the whole pool is then opened anew. A connection dropped within that moment
fails its statement instead, which the store reports as unavailable like any outage (the turn
is not acknowledged, or stays open to be taken again).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.ext.asyncio import AsyncEngine

IDLE_PING_AFTER = 1.0  # seconds in the pool after which a connection is pinged at checkout
_GIVEN_BACK = "threadline_given_back"


def ping_when_idle(engine: AsyncEngine, after: float = IDLE_PING_AFTER) -> None:
    """Make `engine`'s pool ping a connection at checkout only after `after` seconds idle."""
    pool = engine.sync_engine.pool
    dialect = engine.sync_engine.dialect

    @event.listens_for(pool, "checkin")
    def given_back(dbapi_connection: Any, record: Any) -> None:
        record.info[_GIVEN_BACK] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def taken(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        given = record.info.pop(_GIVEN_BACK, None)
        if given is None or time.monotonic() - given < after:
            return  # just connected, or answered a moment ago
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as error:
            # The pool reconnects (this connection, and every other as old) and tries again.
            raise exc.InvalidatePoolError(f"idle connection did not answer: {error}") from error
