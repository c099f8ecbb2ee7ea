"""`SqlConversationStore`: the persistent store, on SQLite (embedded default) or PostgreSQL.

    SqlConversationStore("sqlite:///threadline.db")
    SqlConversationStore("postgresql+asyncpg://user@host/db")
    SqlConversationStore("postgresql+asyncpg://user@host/db?search_path=threadline")

The schema is created or upgraded by the packaged Alembic migrations on first use (never
dropped). Appends that arrive together are committed together (group commit): a burst of
concurrent writers costs one transaction, not one each.

On SQLite the work runs on the standard `sqlite3` driver in the store's own threads (one writer,
a few readers, WAL; a read of a few rows on the event loop's own connection): aiosqlite hops
threads once per statement, which measured about 900 appends/s here, so it is not used (a
`sqlite+aiosqlite:///` URL from an older config still opens the same file; see
`database_url`). On PostgreSQL the same operations run on plain asyncpg connections
(SQLAlchemy's async engine only migrates). The URL is read once, here, and picks the backend; the
backend's runner carries its dialect to the queries.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar

import structlog
from asyncpg import PostgresError
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from threadline.backends.registry import DEFAULT_STORE_URL
from threadline.backends.sql import operations as ops
from threadline.backends.sql.database_url import database_url
from threadline.backends.sql.engines import PostgresBackend, SqliteBackend
from threadline.backends.sql.inbox import SqlTurnInbox
from threadline.backends.sql.notify import Listener, announce, channel_for, encode
from threadline.backends.sql.operations import FEW_ROWS_READ, FEW_TURNS_WRITTEN
from threadline.backends.sql.pg_pool import DATABASE_AWAY
from threadline.backends.sql.postgres import merge_pending_words
from threadline.backends.sql.schema import to_micros
from threadline.backends.sql.sqlite import merge_segments_step
from threadline.errors import StoreError, StoreUnavailableError
from threadline.history.changes import (
    ChangeListener,
    HistoryChange,
    Subscribers,
    Unsubscribe,
    appended,
)
from threadline.history.fusion import FoundByMeaning, fuse_ranks
from threadline.history.model import Scope, StoredMessage
from threadline.history.search import (
    ENGLISH_STOP_WORDS,
    SearchQuery,
    SearchScope,
    around,
    cap_by_tokens,
    hit_spans,
    merge_windows,
)
from threadline.history.store import ConversationInfo, SearchWindow
from threadline.history.tokens import TokenCounter, message_tokens

_MAX_ECHOES = 10_000  # own changes awaiting their notification, at most
log = structlog.get_logger("threadline.store")
T = TypeVar("T")

MAX_BATCH = 500
# Failures that mean "the database is not there right now", as opposed to a bug in a query:
# SQLAlchemy's (the migrations), SQLite's and asyncpg's.
_UNAVAILABLE = (
    OperationalError, InterfaceError, sqlite3.OperationalError, *DATABASE_AWAY)
# Turns waiting for the next group commit, their token counts, and who awaits the result.
_AppendRequest = tuple[Sequence[StoredMessage], list[int], "asyncio.Future[list[bool]]"]


class SqlConversationStore:
    """The persistent `ConversationStore`; see the module docstring."""

    def __init__(
        self,
        url: str = DEFAULT_STORE_URL,
        *,
        token_counter: TokenCounter | None = None,
        stop_words: frozenset[str] = ENGLISH_STOP_WORDS,
        busy_timeout: float = 5.0,
        readers: int = 2,
        pool_size: int = 5,
    ) -> None:
        parsed = database_url(url)
        self.url = parsed
        self._counter = token_counter
        self._stop_words = stop_words
        if parsed.get_backend_name() == "sqlite":
            self._backend: SqliteBackend | PostgresBackend = SqliteBackend(
                parsed, busy_timeout=busy_timeout, readers=readers)
        else:
            self._backend = PostgresBackend(parsed, connect_timeout=busy_timeout,
                                             pool_size=pool_size)
        self._ready: asyncio.Task[None] | None = None
        self._schema_ready = False
        self._pending: list[_AppendRequest] = []
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False
        self.inbox = SqlTurnInbox(self._inbox_call)
        self._changes = Subscribers()
        self._channel = channel_for(parsed)
        # This process's own edits and deletions, told to its subscribers at once (its caches
        # must not serve the old turn until the notification comes back), whose
        # notifications are still to come: each is heard once more and skipped then.
        self._echoes: Counter[HistoryChange] = Counter()
        self._listener = (Listener(parsed, self._heard, timeout=busy_timeout)
                          if self.dialect == "postgresql" else None)

    @property
    def dialect(self) -> str:
        return self.url.get_backend_name()

    @property
    def reads_on_the_loop(self) -> bool:
        """`LoopReadingStore`: SQLite reads a few rows on the loop's own connection."""
        return self.dialect == "sqlite"

    def _describe(self) -> str:
        return self.url.render_as_string(hide_password=True)

    def _unavailable(self, exc: BaseException, action: str) -> StoreUnavailableError:
        detail = str(getattr(exc, "orig", None) or exc).strip()
        # A timeout carries no text; its type is the reason.
        reason = detail.splitlines()[0][:300] if detail else f"{type(exc).__name__} (no reply)"
        lowered = reason.lower()
        if "locked" in lowered or "busy" in lowered:
            hint = "another process holds the database lock longer than the busy timeout"
        elif "readonly" in lowered or "read-only" in lowered or "read only" in lowered:
            hint = "the database is read-only; check the file's permissions and folder"
        elif "database" in lowered and "does not exist" in lowered:
            url, name = self.url, self.url.database
            options = "".join(f" {flag} {value}" for flag, value in (
                ("-h", url.host), ("-p", url.port), ("-U", url.username)) if value)
            hint = (f"create it once: `createdb{options} {name}` or CREATE DATABASE "
                    f"\"{name}\"; Threadline creates its tables itself")
        else:
            hint = "check that the database is running and reachable"
        return StoreUnavailableError(
            f"conversation store {self._describe()} could not {action}: {reason} ({hint})"
        )

    async def _call(self, action: str, write: bool, fn: Callable[..., T], *args: Any,
                    few: bool | Callable[[], bool] = False) -> T:
        """`fn(runner, *args)` in one transaction, its failures in the store's terms; `few`
        says it reads a few rows (with one statement, or several marked
        `operations.several_reads`), or writes a few rows (see `operations.FEW_ROWS_READ`),
        or asks the backend whether it does once the store is ready (a search)."""
        if self._closed:
            raise StoreError(f"conversation store {self._describe()} is closed")
        await self._ensure_ready()
        try:
            if callable(few):
                few = few()
            if write:
                runner = self._backend.write_few if few else self._backend.write
            else:
                runner = self._backend.read_few if few else self._backend.read
            return await runner(fn, *args)
        except _UNAVAILABLE as exc:
            raise self._unavailable(exc, action) from exc
        except (sqlite3.Error, PostgresError) as exc:  # the database refused the statement
            raise StoreError(
                f"conversation store {self._describe()} could not {action}: {exc}") from exc

    async def _inbox_call(self, action: str, write: bool, fn: Callable[..., T], *args: Any,
                          few: bool = False) -> T:
        """The inbox's operations: each of its writes records, claims or settles a turn or a
        reply, a few rows; a read of one row by its key says so (`few`)."""
        return await self._call(action, write, fn, *args, few=write or few)

    def alchemy_engine(self) -> Engine | AsyncEngine:
        """An SQLAlchemy engine on this database, for a library that brings its own SQL
        (slack_sdk's installation store): PostgreSQL's async engine, or for SQLite a sync one
        without a pool, to be used off the event loop. Call it once the store is open."""
        return self._backend.alchemy_engine()

    async def run(self, action: str, fn: Callable[..., T], *args: Any, write: bool = False,
                  few: bool = False) -> T:
        """`fn(runner, *args)` in one transaction on this store's database and threads.

        For tables that live beside the history (the reply records): they share the
        connection pool, the writer thread and the error translation of the store. `few`:
        it reads a few rows with one statement (a row by its key), or writes a few rows; run
        without a hop on SQLite.
        """
        return await self._call(action, write, fn, *args, few=few)

    async def merge_search_index(self) -> None:
        """`SearchIndexMerging`: on SQLite, the FTS5 indexes' segments merged into one, a step
        (a write of its own) at a time; on PostgreSQL, the words index's pending list merged
        (what autovacuum would do within a minute or so)."""
        if self.dialect == "sqlite":
            started = False
            while await self._call("merge the word index", True, merge_segments_step, started):
                started = True
        else:
            await self._call("merge the word index", True, merge_pending_words)

    async def _ensure_ready(self) -> None:
        if self._schema_ready:
            return  # the common case, without a shield future per call
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._migrate())
        ready = self._ready  # concurrent callers share one attempt and all see its outcome
        try:
            await asyncio.shield(ready)
        except BaseException:
            if ready.done() and self._ready is ready:
                self._ready = None  # let the next call try again once the database is back
            raise

    async def _migrate(self) -> None:
        try:
            await self._backend.migrate()
        except (*_UNAVAILABLE, DBAPIError) as exc:  # a database that does not exist, too
            raise self._unavailable(exc, "open or upgrade its schema") from exc
        if self._listener is not None:
            try:
                await self._listener.start()
            except _UNAVAILABLE as exc:
                raise self._unavailable(exc, "listen for history changes") from exc
        self._schema_ready = True
        log.info("store.ready", url=self._describe())

    # -- writes -------------------------------------------------------------------------

    async def append(self, message: StoredMessage) -> bool:
        return (await self.append_many([message]))[0]

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        if not messages:
            return []
        if self._closed:
            raise StoreError(f"conversation store {self._describe()} is closed")
        await self._ensure_ready()
        counts = [message_tokens(m, self._counter) for m in messages]
        future: asyncio.Future[list[bool]] = asyncio.get_running_loop().create_future()
        self._pending.append((messages, counts, future))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        return await future

    async def _flush(self) -> None:
        """Commit everything pending, batch after batch, until nothing is left (group commit)."""
        try:
            while self._pending:
                batch: list[_AppendRequest] = []
                size = 0
                while self._pending and (not batch or size + len(self._pending[0][0]) <= MAX_BATCH):
                    request = self._pending.pop(0)
                    batch.append(request)
                    size += len(request[0])
                messages = [m for request in batch for m in request[0]]
                counts = [c for request in batch for c in request[1]]
                write = _write_one if len(messages) == 1 else _write_announced
                try:
                    flags = await self._call("append", True, partial(
                        write, channel=self._channel), messages, counts,
                        few=len(messages) <= FEW_TURNS_WRITTEN)
                except BaseException as exc:
                    for _, _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                if self._listener is None:  # PostgreSQL notifies through LISTEN, this one too
                    self._changes.notify(appended(messages, flags))
                offset = 0
                for request_messages, _, future in batch:
                    if not future.done():
                        future.set_result(flags[offset : offset + len(request_messages)])
                    offset += len(request_messages)
        finally:
            self._flusher = None

    async def append_with(self, action: str, message: StoredMessage | None,
                          beside: Callable[[ops.SqlRunner], T], *,
                          wait_for_disk: bool = True) -> T:
        """`message` appended (when given) and `beside` run in the same transaction:
        statements of the parts kept beside the history (the inbox, the reply ledger, spend)
        committed with the turn (`SqlWritesTogether`). Not grouped with other appends: the
        transaction is the caller's. `wait_for_disk=False`: a write the caller knows other
        writes cover (`operations.durable_later`)."""
        if self._closed:
            raise StoreError(f"conversation store {self._describe()} is closed")
        messages = [message] if message is not None else []
        counts = [message_tokens(m, self._counter) for m in messages]
        channel = self._channel

        def together(conn: ops.SqlRunner) -> tuple[list[bool], T]:
            flags = _write_announced(conn, messages, counts, channel=channel) if messages else []
            return flags, beside(conn)

        flags, outcome = await self._call(action, True, together if wait_for_disk
                                          else ops.durable_later(together), few=True)
        if messages and self._listener is None:  # PostgreSQL notifies through LISTEN
            self._changes.notify(appended(messages, flags))
        return outcome

    async def edit_message(self, conversation_id: str, message_id: str, content: str) -> bool:
        current = await self.get_by_ids(conversation_id, [message_id])
        if not current:
            return False
        edited = replace(current[0], content=content)  # validates (NUL, size) like an append
        write = self._call("edit a message", True, partial(_edit_announced,
                                                           channel=self._channel),
                           conversation_id, message_id, edited.content,
                           message_tokens(edited, self._counter))
        change = HistoryChange("edit", conversation_id, (message_id,))
        return bool(await self._told_now(change, write))

    async def delete_messages(self, conversation_id: str, ids: Iterable[str]) -> int:
        doomed = list(ids)
        write = self._call("delete messages", True, partial(_delete_announced,
                                                            channel=self._channel),
                           conversation_id, doomed)
        return int(await self._told_now(HistoryChange("delete", conversation_id, tuple(doomed)),
                                        write))

    async def _told_now(self, change: HistoryChange, write: Awaitable[Any]) -> Any:
        """`write`'s outcome, its change told to this process's subscribers as soon as it
        is done (its caches must not serve the old turn until the database's notification
        comes back); that notification, expected before the write, is skipped when heard."""
        expected = self._listener is not None
        if expected:
            if len(self._echoes) > _MAX_ECHOES:  # notifications that never came back
                self._echoes.clear()
            self._echoes[change] += 1
        done = 0
        try:
            done = await write
        finally:
            if expected and not done:
                self._heard_own(change)  # nothing was written: nothing will be announced
        if done:
            self._changes.notify([change])
        return done

    def _heard_own(self, change: HistoryChange) -> bool:
        """Whether `change` is one of this process's own, told already (it is then no longer
        expected)."""
        if self._echoes[change] <= 0:
            return False
        self._echoes[change] -= 1
        if not self._echoes[change]:
            del self._echoes[change]
        return True

    def _heard(self, changes: Sequence[HistoryChange]) -> None:
        """Changes the database announced, less this process's own already told."""
        fresh = [change for change in changes if not self._heard_own(change)]
        if fresh:
            self._changes.notify(fresh)

    def subscribe(self, callback: ChangeListener, conversation_id: str | None = None
                  ) -> Unsubscribe:
        """Heard after each committed append, edit or delete: on PostgreSQL from every process
        on the database (LISTEN/NOTIFY), on SQLite from this process only."""
        return self._changes.subscribe(callback, conversation_id)

    # -- reads --------------------------------------------------------------------------

    async def get(
        self,
        conversation_id: str,
        *,
        scope: Scope | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
        limit: int | None = None,
        participant_ids: Iterable[str] | None = None,
        after_sequence: int | None = None,
        through_sequence: int | None = None,
        include_summaries: bool = False,
    ) -> list[StoredMessage]:
        return await self._call(
            "read messages", False,
            partial(ops.select_turns, scope=scope, since=since, before=before, limit=limit,
                    participant_ids=list(participant_ids) if participant_ids is not None else None,
                    after_sequence=after_sequence, through_sequence=through_sequence,
                    include_summaries=include_summaries),
            conversation_id, few=limit is not None and limit <= FEW_ROWS_READ,
        )

    async def get_by_ids(self, conversation_id: str, ids: Iterable[str]) -> list[StoredMessage]:
        wanted = list(ids)
        return await self._call("read messages", False, ops.select_by_ids, conversation_id,
                                wanted, few=len(wanted) <= FEW_ROWS_READ)

    async def find_by_platform_id(
        self, conversation_id: str, platform_message_id: str
    ) -> StoredMessage | None:
        return await self._call("read a message", False, ops.select_by_platform_id,
                                conversation_id, platform_message_id, few=True)

    async def search(
        self, conversation_id: str, query: str, *, limit: int = 10, token_cap: int = 2000
    ) -> list[StoredMessage]:
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        if parsed.is_empty or limit <= 0:
            return []
        hits = await self._call("search", False,
                                partial(ops.search_hits, limit=limit, scope=SearchScope()),
                                conversation_id, parsed)
        return cap_by_tokens(hits, token_cap)

    async def search_context(
        self,
        conversation_id: str,
        query: str,
        *,
        limit: int = 5,
        context: int | tuple[int, int] = 1,
        token_cap: int = 2000,
        exclude_ids: Collection[str] = (),
        through_sequence: int | None = None,
        similar: FoundByMeaning | None = None,
    ) -> list[SearchWindow]:
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        if parsed.is_empty or limit <= 0:
            return []
        scope = SearchScope(frozenset(exclude_ids), through_sequence)
        return await self._call("search", False, self._search_windows, conversation_id, parsed,
                                limit, around(context), token_cap, scope, similar,
                                few=partial(self._backend.search_is_few, conversation_id,
                                            parsed))

    @staticmethod
    @ops.several_reads
    def _search_windows(
        connection: ops.SqlRunner, conversation_id: str, query: SearchQuery, limit: int,
        context: tuple[int, int], token_cap: int, scope: SearchScope,
        similar: FoundByMeaning | None,
    ) -> list[SearchWindow]:
        lexical = ops.search_hit_sequences(connection, conversation_id, query, limit=limit,
                                           scope=scope)
        if similar is not None:
            similar = ops.shown_by_meaning(connection, conversation_id, similar, scope)
        ranked = fuse_ranks(lexical, similar, limit=limit)
        turns = ops.select_spans(connection, conversation_id, hit_spans(ranked, context), scope)
        by_sequence = {m.sequence: m for m in turns}
        hits = [by_sequence[s] for s in ranked if s in by_sequence]
        return merge_windows(hits, turns, context=context, token_cap=token_cap)

    async def search_speakers(
        self, keys: Collection[str], query: str, *, exclude_conversation: str, before: datetime,
        limit: int = 5, token_cap: int = 1000,
    ) -> list[StoredMessage]:
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        if parsed.is_empty or limit <= 0 or not keys:
            return []
        hits = await self._call("search a person's turns", False, partial(
            ops.search_speakers, exclude_conversation=exclude_conversation,
            before_us=to_micros(before), limit=limit),
            sorted(keys), parsed)
        return cap_by_tokens(hits, token_cap)

    async def latest_summary(
        self, conversation_id: str, *, participant_id: str | None = None
    ) -> StoredMessage | None:
        return await self._call("read the summary", False, ops.select_latest_summary,
                                conversation_id, participant_id, few=True)

    async def list_conversations(self, *, limit: int = 100) -> list[ConversationInfo]:
        return await self._call("list conversations", False, ops.select_conversations, limit)

    async def count(self, conversation_id: str | None = None) -> int:
        return await self._call("count messages", False, ops.count_turns, conversation_id)

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        self._closed = True
        try:
            if self._listener is not None:
                await self._listener.close()
        finally:
            await self._backend.close()

    async def __aenter__(self) -> Self:
        await self._ensure_ready()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _write_announced(conn: ops.SqlRunner, messages: Sequence[StoredMessage],
                     counts: Sequence[int], *, channel: str) -> list[bool]:
    """`write_batch`, and the appends announced at its commit (PostgreSQL): one notification
    per conversation, sent by the insert itself when the batch holds one turn of it (a turn's
    usual write), after the inserts when it holds several."""
    if conn.dialect != "postgresql":
        return ops.write_batch(conn, messages, counts)
    per_conversation = Counter(m.conversation_id for m in messages)
    notices = {m.id: (channel, encode(HistoryChange("append", m.conversation_id, (m.id,))))
               for m in messages if per_conversation[m.conversation_id] == 1}
    flags = ops.write_batch(conn, messages, counts, notices=notices)
    announce(conn, channel, [change for change in appended(messages, flags)
                             if per_conversation[change.conversation_id] > 1])
    return flags


@ops.one_write
def _write_one(conn: ops.SqlRunner, messages: Sequence[StoredMessage], counts: Sequence[int],
               *, channel: str) -> list[bool]:
    """`_write_announced` of one turn: one statement on PostgreSQL (`ops.write_batch`), sent
    without BEGIN and COMMIT."""
    return _write_announced(conn, messages, counts, channel=channel)


def _edit_announced(conn: ops.SqlRunner, conversation_id: str, message_id: str, content: str,
                    token_count: int, *, channel: str) -> bool:
    done = ops.update_content(conn, conversation_id, message_id, content, token_count)
    if done:
        announce(conn, channel, [HistoryChange("edit", conversation_id, (message_id,))])
    return done


def _delete_announced(conn: ops.SqlRunner, conversation_id: str, ids: Sequence[str], *,
                      channel: str) -> int:
    gone = ops.delete_turns(conn, conversation_id, ids)
    if gone:
        announce(conn, channel, [HistoryChange("delete", conversation_id, tuple(ids))])
    return gone
