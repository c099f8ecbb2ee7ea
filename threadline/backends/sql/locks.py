"""The PostgreSQL conversation lock: `pg_try_advisory_lock`, a database lock rather than a
home-made coordinator, released by the server when the owning process dies."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from threadline.errors import ConfigError


def advisory_key(conversation_id: str, namespace: str = "") -> int:
    """A stable signed 64-bit key for a conversation id (PostgreSQL advisory locks take bigint).

    Advisory locks are per database: `namespace` (the schema) keeps two deployments sharing a
    database in different schemas from locking each other's conversations.
    """
    digest = hashlib.blake2b(f"{namespace}|{conversation_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresConversationLock:
    """Across processes: `pg_try_advisory_lock` on a hash of the conversation id.

    Each held conversation uses one pooled connection while it is held, so `pool_size` bounds
    how many conversations one process answers at once (`concurrency`, which the turn pipeline
    keeps to). If the process dies the server drops
    its connections and with them the locks.
    """

    def __init__(self, url: str, *, pool_size: int = 10, connect_timeout: float = 5.0) -> None:
        parsed = make_url(url)
        if parsed.get_backend_name() != "postgresql":
            raise ConfigError(
                f"PostgresConversationLock needs a PostgreSQL URL, got "
                f"{parsed.render_as_string(hide_password=True)!r}; on SQLite one process "
                "serves the database, so the default LocalConversationLock is enough"
            )
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+asyncpg")
        self._namespace = str(parsed.query.get("search_path") or "")
        self.concurrency = pool_size
        self._engine = create_async_engine(
            parsed.difference_update_query(["search_path"]), pool_size=pool_size,
            max_overflow=0, pool_pre_ping=True, pool_timeout=connect_timeout,
            connect_args={"timeout": connect_timeout},
        )

    @asynccontextmanager
    async def try_hold(self, conversation_id: str) -> AsyncIterator[bool]:
        key = advisory_key(conversation_id, self._namespace)
        async with self._engine.connect() as connection:
            taken = (await connection.execute(text("SELECT pg_try_advisory_lock(:key)"),
                                              {"key": key})).scalar_one()
            await connection.commit()  # the lock is the session's; no transaction stays open
            try:
                yield bool(taken)
            finally:
                if taken:
                    await connection.execute(text("SELECT pg_advisory_unlock(:key)"),
                                             {"key": key})
                    await connection.commit()

    async def close(self) -> None:
        await self._engine.dispose()
