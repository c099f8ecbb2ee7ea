"""Where the SQL store's operations run: SQLite threads, or PostgreSQL's asyncpg connections.

`SqliteBackend` keeps one plain `sqlite3` connection per thread (one writer thread, a few
readers, WAL, checkpoints in the background) and runs an operation of a few rows on the event
loop; `PostgresBackend` runs the same operations on plain asyncpg connections, each in a
greenlet whose statements the event loop awaits. Both create or upgrade the schema with the
packaged Alembic migrations, one process at a time.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import structlog
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import greenlet_spawn

from threadline.backends.sql.database_url import sqlite_file
from threadline.backends.sql.idle_ping import ping_when_idle
from threadline.backends.sql.lexeme_counts import KeptLexemeCounts
from threadline.backends.sql.locks import advisory_key
from threadline.backends.sql.operations import (
    WordCounts,
    reads_several,
    waits_for_disk,
    writes_once,
)
from threadline.backends.sql.pg_pool import ConnectionPool, connection_pool
from threadline.backends.sql.postgres import PostgresRunner
from threadline.backends.sql.sqlite import SqliteRunner, searches_few
from threadline.errors import ConfigError, StoreUnavailableError
from threadline.history.search import SearchQuery
from threadline.locks import lock_file, unlock_file

log = structlog.get_logger("threadline.store")
T = TypeVar("T")

# Write transactions between background WAL checkpoints on SQLite.
CHECKPOINT_EVERY = 500
# The writer thread's pauses while another connection holds the write lock (seconds).
LOCK_POLL_FIRST = 0.001
LOCK_POLL_MAX = 0.05

MIGRATIONS = Path(__file__).with_name("migrations")


def _alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def upgrade_schema(connection: Connection) -> None:
    """Run the packaged migrations up to the newest revision on this connection."""
    command.upgrade(_alembic_config(connection), "head")


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    """The newest packaged migration, which a current database is stamped with."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config).get_current_head()


class SqliteBackend:
    """Runs operations on the standard sqlite3 driver: one writer thread, a few reader threads.

    Each thread keeps one raw connection; a write is a single hop to the writer thread that
    runs BEGIN IMMEDIATE, the statements and COMMIT. SQLAlchemy is used only for migrations.

    An operation of a few rows runs on the event loop instead, without the hop (a turn made
    about fifteen, each costing more than the statements it carried):
    - a read (`read_few`) on the loop's own connection: in WAL mode a reader takes no lock a
      writer holds, so it never waits; one of several statements (`several_reads`: a
      search of a short conversation, `search_is_few`) in one snapshot;
    - a write (`write_few`) on the writer thread's own connection, when that thread has
      nothing to do (no job queued or running: writes still commit in the order they were
      asked for, and the connection is never used by two threads at once).
    Neither waits on the loop: both connections' busy timeout is 0. When the database is locked
    (the other worker on the same file is writing, a file left in rollback-journal mode, a
    recovery), BEGIN IMMEDIATE or the read fails at once and the operation goes to its thread,
    which waits up to the busy timeout as before (the writer thread polls for the lock itself,
    `_begin_waiting`). A write begun on the loop holds the write lock: in WAL mode nothing it
    does after that waits on another connection. (A busy wait on the loop could also wait on
    a lock whose holder the loop itself must drive: stalled for the whole busy timeout, then
    "database is locked".)
    """

    def __init__(self, url: URL, *, busy_timeout: float, readers: int) -> None:
        self.url = url
        self.busy_timeout = busy_timeout
        # `sqlite:///file:PATH?mode=ro&uri=true` (SQLAlchemy's URI form) opens read-only.
        self.uri = self.url.query.get("uri") == "true"
        file = sqlite_file(url)
        if file is None:
            raise ConfigError(
                "SqlConversationStore needs a SQLite file (for example "
                "'sqlite:///threadline.db'); for memory only, use InMemoryConversationStore"
            )
        self.path = file
        path = str(file)
        options = {k: v for k, v in self.url.query.items() if k != "uri"}
        self.target = f"file:{path}?{urlencode(options)}" if self.uri else path
        self.read_only = options.get("mode") == "ro"
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="threadline-sqlite-writer")
        self._writer_runner: SqliteRunner | None = None  # the writer thread's, lent to the loop
        # Jobs given to the writer thread and not finished; the loop writes only at 0.
        self._writer_jobs = 0
        self._writer_jobs_lock = threading.Lock()
        self._wal: bool | None = None  # whether the file is in WAL mode (read once)
        self._checkpointer = ThreadPoolExecutor(
            1, thread_name_prefix="threadline-sqlite-checkpoint")
        self._writes_since_checkpoint = 0
        self._checkpointing: asyncio.Future[None] | None = None
        self._readers = ThreadPoolExecutor(readers, thread_name_prefix="threadline-sqlite-reader")
        self._local = threading.local()
        # The search's statistics, shared by every thread: words' postings, and the same
        # counted up to LONG_COUNTED (a long conversation's search).
        self._word_counts = WordCounts()
        self._capped_counts = WordCounts()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.target, uri=self.uri, timeout=self.busy_timeout,
                                     isolation_level=None, check_same_thread=False,
                                     cached_statements=256)
        connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        # Checkpoints (the only fsyncs in WAL mode with synchronous=NORMAL) run in the
        # background, not inside whichever append crosses the threshold; see _checkpoint.
        connection.execute("PRAGMA wal_autocheckpoint = 0")
        with self._opened_lock:
            self._opened.append(connection)
        return connection

    def _runner(self) -> SqliteRunner:
        runner: SqliteRunner | None = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = SqliteRunner(self._connect(), self._word_counts,
                                                        self._capped_counts)
        return runner

    def _loop_runner(self) -> SqliteRunner:
        """The connection of the event loop's thread (see the class docstring)."""
        runner: SqliteRunner | None = getattr(self._local, "loop_runner", None)
        if runner is None:
            connection = self._connect()
            connection.execute("PRAGMA busy_timeout = 0")
            runner = self._local.loop_runner = SqliteRunner(connection, self._word_counts,
                                                             self._capped_counts)
        return runner

    def _writer_connection(self) -> SqliteRunner:
        """The writer's connection: the writer thread's, and the loop's while that thread is
        idle. Its busy timeout is 0 (the loop must not wait); the writer thread waits for the
        write lock itself (`_begin_waiting`)."""
        if self._writer_runner is None:
            connection = self._connect()
            connection.execute("PRAGMA busy_timeout = 0")
            self._writer_runner = SqliteRunner(connection, self._word_counts,
                                               self._capped_counts)
        return self._writer_runner

    def _in_write(self, fn: Callable[..., T], *args: Any) -> T:
        runner = self._writer_connection()
        # Writers take the write lock up front so a busy database fails at BEGIN, inside
        # busy_timeout, instead of deadlocking on a lock upgrade half-way through.
        self._begin_waiting(runner.connection)
        return self._commit_after(runner, fn, *args)

    def _begin_waiting(self, connection: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE, waiting up to the busy timeout for the write lock as SQLite's own
        busy handler would (short sleeps, growing to LOCK_POLL_MAX)."""
        deadline = time.monotonic() + self.busy_timeout
        pause = LOCK_POLL_FIRST
        while not self._began_without_waiting(connection):
            left = deadline - time.monotonic()
            if left <= 0:
                raise sqlite3.OperationalError("database is locked")
            time.sleep(min(pause, left))
            pause = min(pause * 2, LOCK_POLL_MAX)

    @staticmethod
    def _commit_after(runner: SqliteRunner, fn: Callable[..., T], *args: Any) -> T:
        """`fn(runner, *args)` and COMMIT, in the write transaction begun on `runner`."""
        try:
            result = fn(runner, *args)
            runner.connection.execute("COMMIT")
        except BaseException:
            runner.connection.rollback()  # a COMMIT that failed leaves the connection free too
            raise
        return result

    def _in_read(self, fn: Callable[..., T], *args: Any) -> T:
        return self._read_on(self._runner(), fn, *args)

    @staticmethod
    def _read_on(runner: SqliteRunner, fn: Callable[..., T], *args: Any) -> T:
        runner.connection.execute("BEGIN")  # one snapshot for every statement of the read
        try:
            return fn(runner, *args)
        finally:
            runner.connection.rollback()

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = await self._on_writer_thread(self._in_write, fn, *args)
        self._wrote()
        return result

    async def _on_writer_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the writer thread, counted while it waits or runs there."""
        with self._writer_jobs_lock:
            self._writer_jobs += 1
        job: Future[T] = self._writer.submit(fn, *args)
        job.add_done_callback(self._writer_job_done)  # run, or cancelled before it ran
        return await asyncio.wrap_future(job)

    def _writer_job_done(self, _: Future[Any]) -> None:
        with self._writer_jobs_lock:
            self._writer_jobs -= 1

    async def write_few(self, fn: Callable[..., T], *args: Any) -> T:
        """`write`, for an operation that writes a few rows: on the event loop when the writer
        thread is idle and the write lock is free (see the class docstring)."""
        if self._writer_jobs == 0 and self._wal_mode():
            runner = self._writer_connection()
            if self._began_without_waiting(runner.connection):
                result = self._commit_after(runner, fn, *args)
                self._wrote()
                return result
        return await self.write(fn, *args)

    def _wal_mode(self) -> bool:
        """Whether the file is in WAL mode (where a write begun holds every lock it needs);
        False while that cannot be read without waiting."""
        if self._wal is None:
            try:
                mode = self._writer_connection().connection.execute("PRAGMA journal_mode")
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                return False
            self._wal = str(mode.fetchone()[0]).lower() == "wal"
        return self._wal

    @staticmethod
    def _began_without_waiting(connection: sqlite3.Connection) -> bool:
        """BEGIN IMMEDIATE if the write lock is free now; False if another connection holds
        it (the other worker on the file, a library's own engine)."""
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not _locked(exc):
                raise
            return False
        return True

    def _wrote(self) -> None:
        """Count a committed write; every CHECKPOINT_EVERY, checkpoint in the background."""
        loop = asyncio.get_running_loop()
        self._writes_since_checkpoint += 1
        if self._writes_since_checkpoint >= CHECKPOINT_EVERY and (
                self._checkpointing is None or self._checkpointing.done()):
            self._writes_since_checkpoint = 0
            self._checkpointing = loop.run_in_executor(self._checkpointer, self._checkpoint,
                                                       "PASSIVE")

    def _checkpoint(self, mode: str) -> None:
        """Copy the write-ahead log into the database file, beside the writer, never blocking it.

        A PASSIVE checkpoint takes no lock that writers wait on; if readers hold old pages it
        copies what it can and the next one finishes the job.
        """
        try:
            self._runner().connection.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        except sqlite3.Error as exc:
            log.warning("store.checkpoint_failed", path=str(self.path), error=str(exc))

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, partial(self._in_read, fn, *args))

    async def read_few(self, fn: Callable[..., T], *args: Any) -> T:
        """`read`, for an operation that reads a few rows (a bounded LIMIT, a few ids, a
        search of a short conversation): on the event loop's own connection, or in a reader
        thread when the database is locked. One statement is its own snapshot: no BEGIN and
        ROLLBACK (each call into sqlite3 lets another thread take the GIL from the loop);
        several (`operations.several_reads`) share one, as in a reader thread."""
        try:
            if reads_several(fn):
                return self._read_on(self._loop_runner(), fn, *args)
            return fn(self._loop_runner(), *args)
        except sqlite3.OperationalError as exc:
            if not _locked(exc):
                raise
        return await self.read(fn, *args)

    def search_is_few(self, conversation_id: str, query: SearchQuery) -> bool:
        """Whether a search of one conversation reads few enough rows for `read_few`
        (`sqlite.searches_few`, asked on the loop's connection); False while the database
        is locked."""
        try:
            return searches_few(self._loop_runner(), conversation_id, query)
        except sqlite3.OperationalError as exc:
            if not _locked(exc):
                raise
        return False

    async def migrate(self) -> None:
        if not self.path.parent.exists():
            raise StoreUnavailableError(
                f"the folder {str(self.path.parent)!r} for the SQLite database does not exist; "
                "create it or point the store URL elsewhere"
            )
        await self._on_writer_thread(self._migrate_locked)

    def _schema_is_current(self) -> bool:
        try:
            rows = self._runner().rows("SELECT version_num FROM threadline_alembic_version", {})
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return False
            raise
        return [row[0] for row in rows] == [head_revision()]

    def _migrate_locked(self) -> None:
        if self._schema_is_current():
            return  # the usual start: no write lock, and a read-only database opens fine
        if self.read_only:
            raise StoreUnavailableError(
                f"the SQLite database {str(self.path)!r} is opened read-only (mode=ro) and its "
                "schema is missing or older than this Threadline; open it once read-write"
            )
        # Two processes starting on a new file must not both create the schema: the lock file
        # covers the moment before the database exists, BEGIN IMMEDIATE the rest.
        lock_path = Path(f"{self.path}.migrate-lock")
        lock = lock_file(lock_path)
        try:
            self._runner().connection.execute("PRAGMA journal_mode = WAL")
            engine = create_engine("sqlite://", creator=self._connect, poolclass=NullPool)

            @event.listens_for(engine, "begin")
            def _begin(connection: Connection) -> None:
                connection.exec_driver_sql("BEGIN IMMEDIATE")

            try:
                with engine.begin() as connection:
                    upgrade_schema(connection)
            finally:
                engine.dispose()
        finally:
            unlock_file(lock, lock_path)

    def alchemy_engine(self) -> Engine:
        """A synchronous SQLAlchemy engine on the same file, without a pool, for a library
        that brings its own SQLAlchemy statements (run it off the event loop)."""
        return create_engine(self.url, poolclass=NullPool,
                             connect_args={"timeout": self.busy_timeout})

    async def close(self) -> None:
        self._writer.shutdown(wait=True)
        if not self.read_only:
            await asyncio.get_running_loop().run_in_executor(self._checkpointer,
                                                             self._checkpoint, "TRUNCATE")
        self._checkpointer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._opened_lock:
            for connection in self._opened:
                connection.close()
            self._opened.clear()


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (SQLITE_BUSY/LOCKED)."""
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def migration_lock_key(schema: str) -> int:
    """The advisory lock that lets one process at a time migrate `schema` (PostgreSQL's
    advisory locks are per database: keyed by schema, deployments sharing a database in
    different schemas migrate side by side instead of waiting on each other)."""
    return advisory_key("schema migrations", schema)


def _refresh_lexemes(runner: PostgresRunner, conversation_id: str) -> None:
    runner.lexemes.refresh(runner, conversation_id)


class PostgresBackend:
    """Runs operations on plain asyncpg connections, each in a greenlet whose statements the
    event loop awaits (`PostgresRunner`).

    SQLAlchemy's async engine (`run_sync`) cost 468 Python calls and about 310 us for an
    operation of one statement (its pool's checkout and events, execution options, the
    execution context, result rows), against 135 calls and 110 us here and 78 calls and 46 us
    for asyncpg's `fetch` alone: most of a plain turn's time on PostgreSQL went there rather
    than to the database. The engine stays for what brings its own SQLAlchemy: the Alembic
    migrations and `alchemy_engine`.
    """

    def __init__(self, url: URL, *, connect_timeout: float, pool_size: int) -> None:
        # `?search_path=NAME` keeps Threadline's tables in their own schema.
        search_path = url.query.get("search_path")
        url = url.difference_update_query(["search_path"])
        # asyncpg prepares every statement; after five runs PostgreSQL may switch one to a
        # generic plan, which for the searches (blind to the conversation and the sample size)
        # scanned the whole table: 40 ms became 500 ms at a million turns. So each statement
        # is planned for its own values, set once per connection rather than per search.
        server_settings = {"plan_cache_mode": "force_custom_plan"}
        if search_path:
            server_settings["search_path"] = str(search_path)
        connect_args: dict[str, Any] = {"timeout": connect_timeout, "command_timeout": 60,
                                        "server_settings": server_settings}
        self.url = url
        self._migration_lock = migration_lock_key(str(search_path or ""))
        self._engine: AsyncEngine = create_async_engine(
            url, pool_size=pool_size, max_overflow=pool_size, pool_timeout=connect_timeout,
            connect_args=connect_args,
        )
        ping_when_idle(self._engine)
        # The store's own connections: as many as the engine's pool and overflow allowed.
        self._waiting = connection_pool(url, size=2 * pool_size, timeout=connect_timeout,
                                        connect_args=connect_args)
        # The writes marked `durable_later` commit on connections of their own, whose commits
        # do not wait for the disk (a commit that waits costs a plain turn 2 to 5 ms here).
        self._unwaited = connection_pool(
            url, size=2 * pool_size, timeout=connect_timeout, connect_args={
                **connect_args,
                "server_settings": {**server_settings, "synchronous_commit": "off"}})
        # The search's statistics of long conversations, and their refreshes under way.
        self.lexemes = KeptLexemeCounts()
        self._refreshes: dict[str, asyncio.Task[None]] = {}

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        pool = self._waiting if waits_for_disk(fn) else self._unwaited
        # A `one_write` operation's one statement is its own transaction (autocommit).
        return await self._run(pool, fn, *args, transaction=not writes_once(fn))

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """A read outside a transaction: under READ COMMITTED each statement sees its own
        snapshot either way, and BEGIN and ROLLBACK would cost two round trips of their own.
        A search that found a long conversation's word counts stale (`KeptLexemeCounts`)
        leaves their refresh to a task of its own, off the turn's path."""
        try:
            return await self._run(self._waiting, fn, *args)
        finally:
            for conversation_id in self.lexemes.due():
                if conversation_id not in self._refreshes:
                    self._refreshes[conversation_id] = asyncio.ensure_future(
                        self._refresh_lexemes(conversation_id))

    async def _refresh_lexemes(self, conversation_id: str) -> None:
        try:
            await self._run(self._waiting, _refresh_lexemes, conversation_id)
        except Exception as exc:  # the kept counts stay; the next search marks it due again
            log.warning("store.word_counts_refresh_failed", conversation_id=conversation_id,
                        error=f"{type(exc).__name__}: {exc}")
        finally:
            self._refreshes.pop(conversation_id, None)

    async def read_few(self, fn: Callable[..., T], *args: Any) -> T:
        """`read`: a pooled connection is as near for a few rows as for many."""
        return await self.read(fn, *args)

    def search_is_few(self, conversation_id: str, query: SearchQuery) -> bool:
        """Whatever the search, `read_few` is `read` here."""
        return False

    async def write_few(self, fn: Callable[..., T], *args: Any) -> T:
        """`write`: a pooled connection is as near for a few rows as for many."""
        return await self.write(fn, *args)

    async def _run(self, pool: ConnectionPool, fn: Callable[..., T], *args: Any,
                   transaction: bool = False) -> T:
        """`fn(runner, *args)` on a connection of `pool`: in a transaction, or with each
        statement committed alone (autocommit; for a read, under READ COMMITTED each statement
        sees its own snapshot either way)."""
        connection = await pool.take()
        try:
            runner = PostgresRunner(connection, self.lexemes)
            if not transaction:
                return await greenlet_spawn(fn, runner, *args)
            async with connection.transaction():
                return await greenlet_spawn(fn, runner, *args)
        finally:
            pool.give_back(connection)

    def alchemy_engine(self) -> AsyncEngine:
        """The engine itself, for a library that brings its own SQLAlchemy statements."""
        return self._engine

    async def migrate(self) -> None:
        async with self._engine.begin() as connection:
            # One migrating worker at a time; the others wait, then find the schema current.
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                     {"key": self._migration_lock})
            await connection.run_sync(upgrade_schema)
        await self._engine.dispose()  # its connection is not wanted until a library asks

    async def close(self) -> None:
        refreshes = list(self._refreshes.values())
        for task in refreshes:
            task.cancel()
        await asyncio.gather(*refreshes, return_exceptions=True)
        await self._waiting.close()
        await self._unwaited.close()
        await self._engine.dispose()
