"""Per-conversation serialization: one owner of a conversation at a time.

`LocalConversationLock` orders work inside one process (asyncio locks are FIFO, so waiters go
in arrival order). Across processes the turn pipeline asks a `ConversationLock` to *try* to own
a conversation: `SingleProcessLock` always succeeds (SQLite and in-memory stores serve one
process), `PostgresConversationLock` uses `pg_try_advisory_lock`, a database lock rather than a
home-made coordinator, released by the server when the owning process dies.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Protocol, TextIO

from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from threadline.errors import ConfigError


class ConversationLock(Protocol):
    """Owns a conversation across processes while its turns are answered."""

    @property
    def concurrency(self) -> int:
        """How many conversations one process may hold at once."""
        ...

    def try_hold(self, conversation_id: str) -> AbstractAsyncContextManager[bool]:
        """Own the conversation inside the block if the value is True; never waits for it."""
        ...

    async def close(self) -> None: ...


class SingleProcessLock:
    """For stores one process serves: the conversation is always ours."""

    concurrency = 64

    @asynccontextmanager
    async def try_hold(self, conversation_id: str) -> AsyncIterator[bool]:
        yield True

    async def close(self) -> None:
        """Nothing to release."""


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


class SingleProcessGuard:
    """Refuses a second process on a store only one process may serve (a SQLite file).

    An exclusive `flock` on a file beside the database, released by the kernel when the process
    dies, so a crash never leaves it stale.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: TextIO | None = None

    def acquire(self) -> None:
        file = open(self.path, "a+")  # noqa: SIM115 - held open for the process's lifetime
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "unknown"
            file.close()
            raise ConfigError(
                f"another threadline process (pid {holder}) is already serving this SQLite "
                f"database ({self.path.with_suffix('')}); SQLite serves one process. Stop it, "
                "or move the store to PostgreSQL to run several processes"
            ) from None
        file.seek(0)
        file.truncate()
        file.write(str(os.getpid()))
        file.flush()
        self._file = file

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
