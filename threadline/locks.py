"""Per-conversation serialization: one turn of a conversation at a time, in arrival order.

`LocalConversationLock` serves one process (asyncio locks are FIFO, so waiters go in arrival
order); `PostgresConversationLock` serves several worker processes on one PostgreSQL database
with `pg_advisory_lock`, a database lock rather than a home-made coordinator.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from threadline.errors import ConfigError


class ConversationLock(Protocol):
    """Holds one conversation for one turn, so its turns never interleave."""

    def hold(self, conversation_id: str) -> AbstractAsyncContextManager[None]: ...


class LocalConversationLock:
    """In-process: one asyncio lock per conversation, forgotten when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(conversation_id, (asyncio.Lock(), 0))
        self._locks[conversation_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[conversation_id]
            if users == 1:
                del self._locks[conversation_id]
            else:
                self._locks[conversation_id] = (lock, users - 1)


def advisory_key(conversation_id: str) -> int:
    """A stable signed 64-bit key for a conversation id (PostgreSQL advisory locks take bigint)."""
    digest = hashlib.blake2b(conversation_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresConversationLock:
    """Across processes: `pg_advisory_lock` on a hash of the conversation id, per turn.

    Each held conversation uses one pooled connection for the length of the turn, so
    `pool_size` bounds how many conversations one process answers at once. If the process dies
    the server drops its connections and with them the locks.
    """

    def __init__(self, url: str, *, pool_size: int = 20, connect_timeout: float = 5.0) -> None:
        parsed = make_url(url)
        if parsed.get_backend_name() != "postgresql":
            raise ConfigError(
                f"PostgresConversationLock needs a PostgreSQL URL, got "
                f"{parsed.render_as_string(hide_password=True)!r}; on SQLite one process "
                "serves the database, so the default LocalConversationLock is enough"
            )
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+asyncpg")
        self._engine = create_async_engine(
            parsed.difference_update_query(["search_path"]), pool_size=pool_size,
            max_overflow=0, pool_pre_ping=True, pool_timeout=connect_timeout,
            connect_args={"timeout": connect_timeout},
        )

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        key = advisory_key(conversation_id)
        async with self._engine.connect() as connection:
            await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
            try:
                yield
            finally:
                await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})

    async def close(self) -> None:
        await self._engine.dispose()
