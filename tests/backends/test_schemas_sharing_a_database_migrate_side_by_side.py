"""Two deployments in different schemas of one PostgreSQL database migrate side by side: one
migrating (holding its schema's migration lock) does not make the other wait. Advisory locks
are per database, so a single fixed key made every schema's migration queue behind any other's
(and made parallel test workers, each in its own schema, wait for each other)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import migration_lock_key

pytestmark = pytest.mark.postgres


def _schema(url: str) -> str:
    return url.rsplit("search_path=", 1)[-1]


async def _someone_waits_for(holder: asyncpg.Connection, schema: str) -> bool:
    """Whether a session waits for `schema`'s migration lock (advisory keys show as two
    32-bit halves in pg_locks; other schemas' waiters are not counted)."""
    waiting = await holder.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND ((classid::bigint << 32) | objid::bigint) = $1", migration_lock_key(schema))
    return bool(waiting)


async def test_a_migration_in_another_schema_does_not_hold_this_one_up(pg_url: str) -> None:
    other = await fresh_pg_schema(pg_url_or_skip())
    dsn = pg_url_or_skip().replace("postgresql+asyncpg://", "postgresql://")
    holder = await asyncpg.connect(dsn)
    try:
        async with holder.transaction():
            # The other deployment is migrating: it holds its schema's lock until it commits.
            await holder.execute("SELECT pg_advisory_xact_lock($1)",
                                 migration_lock_key(_schema(other)))
            store = SqlConversationStore(pg_url)
            try:
                # Not a timing claim: without a per-schema key this waits until the holder
                # commits, which it does only after this line, so the bound is a deadlock guard.
                await asyncio.wait_for(store.__aenter__(), timeout=60)
                assert await store.count() == 0
            finally:
                await store.close()
    finally:
        await holder.close()
        await drop_pg_schema(other)


async def test_one_schema_is_migrated_by_one_process_at_a_time(pg_url: str) -> None:
    dsn = pg_url_or_skip().replace("postgresql+asyncpg://", "postgresql://")
    holder = await asyncpg.connect(dsn)
    store = SqlConversationStore(pg_url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT pg_advisory_xact_lock($1)",
                                 migration_lock_key(_schema(pg_url)))
            opening = asyncio.ensure_future(store.__aenter__())
            for _ in range(1200):  # until the store queues behind the lock (or is let through)
                if opening.done() or await _someone_waits_for(holder, _schema(pg_url)):
                    break
                await asyncio.sleep(0.05)
            assert not opening.done()
        await opening
        assert await store.count() == 0
    finally:
        await store.close()
        await holder.close()
