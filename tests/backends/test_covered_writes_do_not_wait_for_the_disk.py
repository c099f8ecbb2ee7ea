"""On PostgreSQL a write marked `durable_later` commits without waiting for the disk, and every
other write still waits: the mark picks the connection, and the connection's setting is what
the server applies at commit."""

from __future__ import annotations

import pytest

from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import PostgresBackend
from threadline.backends.sql.operations import SqlRunner, durable_later, one_write


def _shown(conn: SqlRunner) -> str:
    return str(conn.rows("SHOW synchronous_commit", {})[0][0])


@durable_later
def _shown_covered(conn: SqlRunner) -> str:
    return _shown(conn)


@durable_later
@one_write
def _shown_covered_alone(conn: SqlRunner) -> str:
    return _shown(conn)


@one_write
def _shown_alone(conn: SqlRunner) -> str:
    return _shown(conn)


@pytest.mark.postgres
async def test_only_covered_writes_commit_without_waiting(pg_url: str) -> None:
    async with SqlConversationStore(pg_url) as store:
        backend = store._backend
        assert isinstance(backend, PostgresBackend)
        assert await backend.write(_shown) == "on"
        assert await backend.write(_shown_alone) == "on"
        assert await backend.read(_shown) == "on"
        assert await backend.write(_shown_covered) == "off"
        assert await backend.write(_shown_covered_alone) == "off"
