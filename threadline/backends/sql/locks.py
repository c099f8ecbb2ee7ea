"""The PostgreSQL conversation lock: `pg_try_advisory_lock`, a database lock rather than a
home-made coordinator, released by the server when the owning process dies."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import structlog
from sqlalchemy import make_url

from threadline.backends.sql.pg_pool import connection_pool
from threadline.errors import ConfigError
from threadline.locks import SECOND_LOOK

log = structlog.get_logger("threadline.pipeline")

# Seconds a conversation stays held once its turns are answered: the next turn of a lively
# chat skips the lock and unlock. Shorter than another process's second look, so a turn that
# process recorded meanwhile is never left waiting for the scan.
LINGER = SECOND_LOOK / 2


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
    keeps to). A conversation is held `linger` seconds past its last turn (`LINGER`), unless
    its connection is wanted for another one sooner. If the process dies the server drops its
    connections and with them the locks.
    """

    def __init__(self, url: str, *, pool_size: int = 10, connect_timeout: float = 5.0,
                 linger: float = LINGER) -> None:
        parsed = make_url(url)
        if parsed.get_backend_name() != "postgresql":
            raise ConfigError(
                f"PostgresConversationLock needs a PostgreSQL URL, got "
                f"{parsed.render_as_string(hide_password=True)!r}; on SQLite one process "
                "serves the database, so the default LocalConversationLock is enough"
            )
        self._namespace = str(parsed.query.get("search_path") or "")
        self.concurrency = pool_size
        self.linger = linger
        # Plain asyncpg connections (`pg_pool`): a lock taken and given back is a statement
        # each, which through SQLAlchemy's engine cost more Python than the round trip.
        self._pool = connection_pool(
            parsed.difference_update_query(["search_path"]), size=pool_size,
            timeout=connect_timeout, connect_args={"timeout": connect_timeout})
        self._in_use = 0
        # Held, their turns answered: by conversation, the connection and its release.
        self._idle: dict[str, tuple[asyncpg.Connection, asyncio.TimerHandle]] = {}
        self._releasing: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def try_hold(self, conversation_id: str) -> AsyncIterator[bool]:
        self._in_use += 1  # from here: it may take a connection
        try:
            connection = await self._still_held(conversation_id) or await self._take(
                conversation_id)
            if connection is None:
                yield False
                return
            try:
                yield True
            finally:
                if self.linger > 0:
                    self._idle[conversation_id] = (
                        connection, asyncio.get_running_loop().call_later(
                            self.linger, self._release_later, conversation_id))
                else:
                    await self._release(conversation_id, connection)
        finally:
            self._in_use -= 1

    async def _take(self, conversation_id: str) -> asyncpg.Connection | None:
        """A connection now holding the conversation; None when another process holds it."""
        await self._make_room()
        connection = await self._pool.take()
        try:
            # Outside a transaction: an advisory lock is the session's, not a transaction's,
            # so taking and giving it back is one round trip each.
            taken = await connection.fetchval("SELECT pg_try_advisory_lock($1)",
                                              advisory_key(conversation_id, self._namespace))
        except BaseException:
            connection.terminate()  # its session, and any lock it took, end with it
            self._pool.give_back(connection)
            raise
        if not taken:
            self._pool.give_back(connection)
            return None
        return connection

    async def _still_held(self, conversation_id: str) -> asyncpg.Connection | None:
        """The connection still holding the conversation from its last turns, if it is alive
        (a connection the server dropped took the lock with it)."""
        idle = self._idle.pop(conversation_id, None)
        if idle is None:
            return None
        connection, release = idle
        release.cancel()
        if connection.is_closed():
            self._pool.give_back(connection)
            return None
        return connection

    async def _make_room(self) -> None:
        """Let go of the longest idle conversation when every connection is taken."""
        while self._idle and self._in_use + len(self._idle) > self.concurrency:
            oldest = next(iter(self._idle))
            connection, release = self._idle.pop(oldest)
            release.cancel()
            await self._release(oldest, connection)

    def _release_later(self, conversation_id: str) -> None:
        idle = self._idle.pop(conversation_id, None)
        if idle is not None:
            task = asyncio.get_running_loop().create_task(self._release(conversation_id,
                                                                        idle[0]))
            self._releasing.add(task)
            task.add_done_callback(self._releasing.discard)

    async def _release(self, conversation_id: str, connection: asyncpg.Connection) -> None:
        try:
            await connection.execute("SELECT pg_advisory_unlock($1)",
                                     advisory_key(conversation_id, self._namespace))
        except Exception as exc:  # the server drops a broken connection's locks itself
            log.warning("pipeline.unlock_failed", conversation_id=conversation_id,
                        error=str(exc))
            connection.terminate()
        finally:
            self._pool.give_back(connection)

    async def close(self) -> None:
        for conversation_id in list(self._idle):
            connection, release = self._idle.pop(conversation_id)
            release.cancel()
            await self._release(conversation_id, connection)
        if self._releasing:
            await asyncio.gather(*self._releasing, return_exceptions=True)
        await self._pool.close()
