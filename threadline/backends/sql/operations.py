"""Every SQL operation of the conversation store, written once against a `SqlRunner`.

The SQLite backend runs these in its own threads on the plain `sqlite3` driver, which takes our
`:name` parameters as written (SQLAlchemy's per-statement compile, cache-key and result setup
cost about 90 us a statement, more than SQLite itself); the PostgreSQL backend runs them on plain
asyncpg connections, in a greenlet whose statements the event loop awaits. Parameters are always
bound, never formatted into SQL.

What differs by dialect lives with the dialect: each backend makes its runner once
(`sql_sqlite.SqliteRunner`, `sql_postgres.PostgresRunner`), and the runner's `ranked` is that
dialect's full-text search (FTS5 MATCH or tsquery, built in its module).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from threadline.backends.sql.schema import (
    SELECT_LIST,
    SELECT_LIST_M,
    from_micros,
    has_cjk,
    message_to_row,
    row_to_message,
    to_micros,
)
from threadline.history.fusion import FoundByMeaning
from threadline.history.model import Scope, StoredMessage
from threadline.history.search import (
    MONTH_BOOST,
    SearchQuery,
    SearchScope,
)
from threadline.history.store import ConversationInfo

Params = Mapping[str, Any]
# Turns above which a search is planned for a long conversation: on PostgreSQL the planner
# uses the full-text index first, on SQLite the conversation is filtered outside MATCH.
LONG_CONVERSATION = 20_000
# What a search returns when only the hits' places are wanted (windows read the rows).
HIT_KEYS = "m.id, m.sequence"
# Matches in the whole index that a long conversation's search ranks at most, its rarest words
# kept first (ranking costs 5 to 10 us a matched turn), and postings it counts of a word at most.
LONG_RANKED = 1_000
LONG_COUNTED = 4 * LONG_RANKED
# Newest turns of a conversation whose word counts weigh a PostgreSQL search's words.
WEIGHING_SAMPLE = 2_000
# Speaker keys one person memory search takes at most (one person's linked identities).
MAX_SPEAKER_KEYS = 64


Operation = TypeVar("Operation", bound=Callable[..., Any])
_ONE_WRITE = "threadline_one_write"


def one_write(operation: Operation) -> Operation:
    """Mark a write operation whose changes are made by one statement: any other statement it
    sends only reads, changes nothing (an INSERT that met its conflict, an UPDATE that
    matched no row), or corrects a count whatever was written meanwhile (a turn two writers
    stored at once: `_write_one_postgres`).

    PostgreSQL runs such an operation without BEGIN and COMMIT (autocommit): the statement is
    atomic and durable by itself when it returns, and under READ COMMITTED each statement of a
    transaction sees its own snapshot anyway, so only those two round trips go (each waits for
    the server; a plain turn's inbox, history and ledger writes alone are eight). SQLite
    ignores the mark.
    """
    setattr(operation, _ONE_WRITE, True)
    return operation


def writes_once(operation: Callable[..., Any]) -> bool:
    """Whether `operation` (or the function a `functools.partial` wraps) is `one_write`."""
    return bool(getattr(getattr(operation, "func", operation), _ONE_WRITE, False))


# Operations of a few rows run on the event loop on SQLite, without a hop to a thread
# (`SqliteBackend.read_few`, `write_few`): a read of at most FEW_ROWS_READ turns (the
# assembler's newest turns, `max_turns_to_load` and half again, fit; a search of a
# conversation no longer than that, `sqlite.searches_few`), a write of at most
# FEW_TURNS_WRITTEN turns or their vectors (a turn's question or answer; a batch that
# indexes hundreds of turns would hold the loop for milliseconds).
FEW_ROWS_READ = 200
FEW_TURNS_WRITTEN = 10


_DURABLE_LATER = "threadline_durable_later"


def durable_later(operation: Operation) -> Operation:
    """Mark a write that need not wait for the disk: what its loss would undo is redone from
    writes that did wait (a turn taken is taken again from the inbox; a reply recorded as
    delivered stays claimed in the ledger, which says the process died between posting and
    recording it), and nobody outside is told anything on the strength of it alone.

    PostgreSQL commits it with `synchronous_commit` off: visible to every process at once and
    kept through any crash of ours (kill -9), it can be lost only when the database server
    itself crashes within a moment of it (`wal_writer_delay`, 200 ms by default), and then
    with everything written after it (the write-ahead log is one sequence): as if our process
    had died just before making it. SQLite ignores the mark (its commits in WAL mode with
    `synchronous = NORMAL` never wait for the disk).
    """
    setattr(operation, _DURABLE_LATER, True)
    return operation


_SEVERAL_READS = "threadline_several_reads"


def several_reads(operation: Operation) -> Operation:
    """Mark a read of a few rows that sends more than one statement (a search: its ranking,
    then its windows' turns). Run on the event loop (`SqliteBackend.read_few`), its statements
    share one snapshot (BEGIN and ROLLBACK around them), as those of a read in a reader thread
    always do; a read of one statement is a snapshot by itself and goes without."""
    setattr(operation, _SEVERAL_READS, True)
    return operation


def reads_several(operation: Callable[..., Any]) -> bool:
    """Whether `operation` (or the function a `functools.partial` wraps) is `several_reads`."""
    return bool(getattr(getattr(operation, "func", operation), _SEVERAL_READS, False))


def waits_for_disk(operation: Callable[..., Any]) -> bool:
    """False when `operation` (or the function a `functools.partial` wraps) is
    `durable_later`."""
    return not getattr(getattr(operation, "func", operation), _DURABLE_LATER, False)


class SqlRunner(Protocol):
    """Runs one statement with `:name` parameters inside the caller's transaction."""

    @property
    def dialect(self) -> str: ...

    def rows(self, sql: str, params: Params) -> list[Sequence[Any]]: ...

    def rowcount(self, sql: str, params: Params) -> int: ...

    def ranked(self, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
               columns: str) -> list[Sequence[Any]]:
        """The dialect's full-text search: best-ranked rows (`columns` of `m`), best first."""
        ...

    def speakers_ranked(self, keys: Sequence[str], query: SearchQuery, *,
                        exclude_conversation: str, before_us: int,
                        limit: int) -> list[Sequence[Any]]:
        """The dialect's search among turns carrying one of the speaker `keys` (person memory),
        outside `exclude_conversation`, said before `before_us`: SELECT_LIST_M rows, best
        first."""
        ...


_COLUMNS = (
    "id, conversation_id, conv_key, sequence, participant_kind, participant_id, "
    "participant_name, content, ts_us, scope, channel_type, channel_name, channel_id, "
    "thread_id, message_id, mentions, is_summary, has_cjk, tool_json, extra_json, token_count, "
    "speaker_key, speaker_space")
_INSERT_COLUMNS = ", ".join(f":{name}" for name in _COLUMNS.split(", "))
_INSERT = (f"INSERT INTO threadline_messages ({_COLUMNS}) VALUES ({_INSERT_COLUMNS}) "
           "ON CONFLICT DO NOTHING")
# Creates the conversation row or reserves the next `n` sequences in it, returning its last
# sequence after them: one write of the row per batch. On PostgreSQL the DO UPDATE also
# row-locks it until commit, so sequences follow commit order across processes.
_CLAIM_CONVERSATION = (
    "INSERT INTO threadline_conversations (conversation_id, last_sequence, message_count, "
    "last_activity_us) VALUES (:cid, :n, :n, :ts) ON CONFLICT (conversation_id) DO UPDATE "
    "SET last_sequence = threadline_conversations.last_sequence + :n, "
    "message_count = threadline_conversations.message_count + :n, "
    "last_activity_us = CASE WHEN threadline_conversations.last_activity_us > :ts "
    "THEN threadline_conversations.last_activity_us ELSE :ts END RETURNING last_sequence"
)
# `_CLAIM_CONVERSATION` for one turn, made only when the turn is not stored yet.
_CLAIM_UNSTORED = _CLAIM_CONVERSATION.replace(
    "VALUES (:cid, :n, :n, :ts)",
    "SELECT :cid, :n, :n, :ts WHERE NOT EXISTS (SELECT 1 FROM threadline_messages "
    "WHERE id = :id)")
_GIVE_BACK_COUNT = ("UPDATE threadline_conversations SET message_count = message_count - 1 "
                    "WHERE conversation_id = :cid")
# Gives back the sequences reserved for turns that were already stored (a redelivery, a
# replay): rare, and the row is still ours (locked, or SQLite's one writer).
_RETURN_SEQUENCES = (
    "UPDATE threadline_conversations SET last_sequence = last_sequence - :gap, "
    "message_count = message_count - :gap WHERE conversation_id = :cid"
)


def _messages(rows: Sequence[Sequence[Any]]) -> list[StoredMessage]:
    return [row_to_message(row) for row in rows]


def write_batch(
    conn: SqlRunner, messages: Sequence[StoredMessage], token_counts: Sequence[int], *,
    notices: Mapping[str, tuple[str, str]] | None = None,
) -> list[bool]:
    """Insert turns in one transaction, allocating each conversation's next sequences.

    The conversation rows are claimed first (in a fixed order, so two workers never deadlock),
    which makes the sequence the order of commit across every process on the database.
    `notices` (PostgreSQL): by turn id, the (channel, payload) its insert sends with
    `pg_notify` when it goes in, in the same statement (no round trip of its own).
    """
    if len(messages) == 1 and conn.dialect == "postgresql":
        notice = (notices or {}).get(messages[0].id)
        return [_write_one_postgres(conn, messages[0], token_counts[0], notice)]
    size: dict[str, int] = {}
    latest: dict[str, int] = {}
    for message in messages:
        cid, ts = message.conversation_id, to_micros(message.timestamp)
        size[cid] = size.get(cid, 0) + 1
        latest[cid] = max(latest.get(cid, ts), ts)
    last = {
        cid: int(conn.rows(_CLAIM_CONVERSATION, {"cid": cid, "n": size[cid],
                                                 "ts": latest[cid]})[0][0]) - size[cid]
        for cid in sorted(size)
    }
    flags: list[bool] = []
    for message, tokens in zip(messages, token_counts, strict=True):
        cid = message.conversation_id
        row = message_to_row(message, sequence=last[cid] + 1, token_count=tokens)
        notice = (notices or {}).get(message.id)
        if notice is None:
            inserted = conn.rowcount(_INSERT, row) == 1
        else:
            inserted = bool(conn.rows(f"{_INSERT} RETURNING pg_notify(:notify_channel, "
                                      ":notify_payload)", {**row, "notify_channel": notice[0],
                                                           "notify_payload": notice[1]}))
        flags.append(inserted)
        if inserted:
            last[cid] += 1
            size[cid] -= 1
    for cid, gap in size.items():
        if gap:
            conn.rowcount(_RETURN_SEQUENCES, {"cid": cid, "gap": gap})
    return flags


def _write_one_postgres(conn: SqlRunner, message: StoredMessage, tokens: int,
                        notice: tuple[str, str] | None) -> bool:
    """One turn in one statement (the common case: a turn, a reply), which PostgreSQL may run
    alone, without BEGIN and COMMIT (`store._write_one`): the conversation row's claim is a CTE
    whose sequence the insert takes (the claim's row lock still orders sequences by commit),
    and a turn already stored (a replay) claims nothing.

    Two writers storing the same new turn at once (the unique index lets one in) is the only
    way a claim goes unused: its count is given back and its sequence left unused, a gap like
    a deleted turn's (giving the sequence back would be wrong outside a transaction, where
    another turn may have claimed the next one meanwhile)."""
    cid = message.conversation_id
    row = message_to_row(message, sequence=0, token_count=tokens)
    values = _INSERT_COLUMNS.replace(":sequence", "claim.last_sequence")
    returning = ("RETURNING pg_notify(:notify_channel, :notify_payload)" if notice is not None
                 else "RETURNING 1")
    params = {**row, "cid": cid, "n": 1, "ts": to_micros(message.timestamp)}
    if notice is not None:
        params.update(notify_channel=notice[0], notify_payload=notice[1])
    [(claimed, inserted)] = conn.rows(
        f"WITH claim AS ({_CLAIM_UNSTORED}), stored AS (INSERT INTO threadline_messages "
        f"({_COLUMNS}) SELECT {values} FROM claim ON CONFLICT DO NOTHING {returning}) "
        "SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM stored)", params)
    if claimed and not inserted:
        conn.rowcount(_GIVE_BACK_COUNT, {"cid": cid})
    return bool(inserted)


def select_turns(
    conn: SqlRunner,
    conversation_id: str,
    *,
    scope: Scope | None,
    since: datetime | None,
    before: datetime | None,
    limit: int | None,
    participant_ids: Sequence[str] | None,
    after_sequence: int | None,
    through_sequence: int | None,
    include_summaries: bool,
) -> list[StoredMessage]:
    """Turns of one conversation, newest `limit` of them, returned oldest first."""
    where = ["conversation_id = :cid"]
    params: dict[str, Any] = {"cid": conversation_id}
    if not include_summaries:
        where.append("is_summary = false")
    if scope is not None:
        where.append("scope = :scope")
        params["scope"] = scope
    if since is not None:
        where.append("ts_us >= :since")
        params["since"] = to_micros(since)
    if before is not None:
        where.append("ts_us < :before")
        params["before"] = to_micros(before)
    if after_sequence is not None:
        where.append("sequence > :after")
        params["after"] = after_sequence
    if through_sequence is not None:
        where.append("sequence <= :through")
        params["through"] = through_sequence
    if participant_ids is not None:
        if not participant_ids:
            return []
        names = [f":p{i}" for i in range(len(participant_ids))]
        where.append(f"participant_id IN ({', '.join(names)})")
        params.update({f"p{i}": pid for i, pid in enumerate(participant_ids)})
    sql = f"SELECT {SELECT_LIST} FROM threadline_messages WHERE {' AND '.join(where)} "
    if limit is None:
        rows = conn.rows(sql + "ORDER BY sequence", params)
        return _messages(rows)
    params["limit"] = max(limit, 0)
    rows = conn.rows(sql + "ORDER BY sequence DESC LIMIT :limit", params)
    return _messages(rows[::-1])


def select_by_ids(
    conn: SqlRunner, conversation_id: str, ids: Sequence[str]
) -> list[StoredMessage]:
    if not ids:
        return []
    names = ", ".join(f":i{n}" for n in range(len(ids)))
    params: dict[str, Any] = {f"i{n}": value for n, value in enumerate(ids)}
    # Read by the ids' own index, then kept to the conversation and sorted here: given the
    # conversation in SQL (or asked to sort), SQLite reads the rows through the (conversation,
    # sequence) index, walking the whole conversation (270 ms for 34 ids of a 100,000-turn
    # one) where the ids' index reads 34 rows.
    found = _messages(conn.rows(
        f"SELECT {SELECT_LIST} FROM threadline_messages WHERE id IN ({names})", params))
    return sorted((m for m in found if m.conversation_id == conversation_id),
                  key=lambda message: message.sequence or 0)


def select_by_platform_id(
    conn: SqlRunner, conversation_id: str, platform_message_id: str
) -> StoredMessage | None:
    rows = conn.rows(
        f"SELECT {SELECT_LIST} FROM threadline_messages WHERE conversation_id = :cid "
        "AND message_id = :mid", {"cid": conversation_id, "mid": platform_message_id},
    )
    return _messages(rows)[0] if rows else None


def scoped(table: str, scope: SearchScope, params: dict[str, Any]) -> str:
    """The SQL that keeps a search inside `scope`, its parameters added to `params`."""
    column = f"{table}." if table else ""
    sql = ""
    if scope.through_sequence is not None:
        params["through"] = scope.through_sequence
        sql += f" AND {column}sequence <= :through"
    if scope.exclude_ids:
        names = []
        for n, excluded in enumerate(sorted(scope.exclude_ids)):
            params[f"x{n}"] = excluded
            names.append(f":x{n}")
        sql += f" AND {column}id NOT IN ({', '.join(names)})"
    return sql


def search_hits(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, *, limit: int,
    scope: SearchScope,
) -> list[StoredMessage]:
    """Best-ranked searchable turns of one conversation (no summaries), best first."""
    return _messages(_ranked(conn, conversation_id, query, limit, scope, SELECT_LIST_M))


def search_hit_sequences(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, *, limit: int,
    scope: SearchScope,
) -> list[int]:
    """The sequences of `search_hits`, best first: windows read the rows with their neighbours."""
    return [int(row[1]) for row in _ranked(conn, conversation_id, query, limit, scope,
                                             HIT_KEYS)]


def search_speakers(
    conn: SqlRunner, keys: Sequence[str], query: SearchQuery, *, exclude_conversation: str,
    before_us: int, limit: int,
) -> list[StoredMessage]:
    """The best-ranked turns carrying one of `keys` (see `threadline.history.speakers`),
    outside `exclude_conversation`, said before `before_us` (a channel post is also its reply
    thread's first turn: the question being answered must not come back as its own memory)."""
    if not keys or limit <= 0:
        return []
    return _messages(conn.speakers_ranked(keys[:MAX_SPEAKER_KEYS], query,
                                          exclude_conversation=exclude_conversation,
                                          before_us=before_us, limit=limit))


def _ranked(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str,
) -> list[Sequence[Any]]:
    """The best-ranked rows (`columns` of `m`, the turn id first), best first, by the full-text
    search of the runner's dialect (`sql_sqlite`, `sql_postgres`)."""
    return conn.ranked(conversation_id, query, limit, scope, columns)


def month_factor(query: SearchQuery, params: dict[str, Any], *, year: str, month: str) -> str:
    """SQL multiplying a turn's score by MONTH_BOOST when it is from a month the query names;
    `year` and `month` are the dialect's SQL for the turn's year and month."""
    if not query.months:
        return ""
    tests = []
    for n, (y, mo) in enumerate(query.months):
        params[f"mo{n}"] = mo
        test = f"{month} = :mo{n}"
        if y is not None:
            params[f"my{n}"] = y
            test += f" AND {year} = :my{n}"
        tests.append(f"({test})")
    params["boost"] = MONTH_BOOST
    return f" * (CASE WHEN {' OR '.join(tests)} THEN :boost ELSE 1.0 END)"


def conversation_rows(size: int, columns: str = "*") -> str:
    """The rows a PostgreSQL search reads: the conversation's, through its btree, when short.

    Left alone, the planner ANDs the conversation's btree with the GIN index, and a common
    word makes the GIN side walk a large share of the table (43 ms at a million turns for a
    1,000-turn conversation, against about 3 ms reading its rows and ranking them). For very
    long conversations the GIN plan wins, so it is kept for them. `OFFSET 0` is PostgreSQL's
    fence against the planner merging the subquery back. `columns` are those the search reads
    (fewer columns, less to sort).
    """
    if size > LONG_CONVERSATION:
        return f"(SELECT {columns} FROM threadline_messages WHERE conversation_id = :cid)"
    return (f"(SELECT {columns} FROM threadline_messages WHERE conversation_id = :cid "
            "ORDER BY sequence OFFSET 0)")


class WordCounts:
    """How many turns of the whole word index hold a word (each dialect's search prunes its
    most common words by these), shared by the store's threads.

    Counting walks the word's postings once, so a count is kept: a count that lags behind new
    turns only makes the pruning milder, and none is older than `max_age` seconds (the index
    of a busy bot grows by thousands of turns an hour).
    """

    def __init__(self, *, max_age: float = 600.0, size: int = 20_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.size = size
        self.clock = clock
        self._counts: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, word: str) -> int | None:
        with self._lock:
            known = self._counts.get(word)
        if known is None or self.clock() - known[1] > self.max_age:
            return None
        return known[0]

    def put(self, word: str, count: int) -> None:
        with self._lock:
            self._counts[word] = (count, self.clock())
            self._counts.move_to_end(word)
            if len(self._counts) > self.size:
                self._counts.popitem(last=False)


class ConversationSizes:
    """How many turns each conversation had at its last search, which picks the next search's
    plan (`conversation_rows`, the long plans of both dialects): read in the search's own
    statement, so it is one search stale at most, and before the first search of a
    conversation in this process (`conversation_size`): that search, planned as a short one,
    ran past the store's timeout on a 100,000-turn conversation. Shared by the store's
    threads."""

    def __init__(self, capacity: int = 8192) -> None:
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> int | None:
        with self._lock:
            return self._sizes.get(conversation_id)

    def remember(self, conversation_id: str, size: int) -> None:
        with self._lock:
            self._sizes[conversation_id] = size
            self._sizes.move_to_end(conversation_id)
            if len(self._sizes) > self._capacity:
                self._sizes.popitem(last=False)


conversation_sizes = ConversationSizes()
# The SQL of a search's column holding its conversation's size (`ConversationSizes`).
CONVERSATION_SIZE = ("coalesce((SELECT message_count FROM threadline_conversations "
                     "WHERE conversation_id = :cid), 0)")


def conversation_size(conn: SqlRunner, conversation_id: str) -> int:
    """The conversation's turns as its last search in this process saw them, read now when
    there was none (see `ConversationSizes`)."""
    known = conversation_sizes.get(conversation_id)
    if known is None:
        known = int(conn.rows(f"SELECT {CONVERSATION_SIZE}", {"cid": conversation_id})[0][0])
        conversation_sizes.remember(conversation_id, known)
    return known


def select_spans(
    conn: SqlRunner, conversation_id: str, spans: Sequence[tuple[int, int]],
    scope: SearchScope,
) -> list[StoredMessage]:
    """The non-summary turns whose sequences lie in these (first, last) ranges, in one query.

    One range read per span on the (conversation, sequence) index, UNION ALL-ed: OR-ed ranges
    made SQLite walk the whole conversation (7 ms against 0.1 ms for 48 ranges in a
    10,000-turn conversation), a joined VALUES list made PostgreSQL do so (47 ms), and the
    scope's conditions inside the query did too, so the scope is applied to the rows read.
    """
    if not spans:
        return []
    params: dict[str, Any] = {"cid": conversation_id}
    reads = []
    for n, (first, last) in enumerate(spans):
        params[f"f{n}"], params[f"l{n}"] = first, last
        reads.append(f"SELECT * FROM (SELECT {SELECT_LIST} FROM threadline_messages "
                     f"WHERE conversation_id = :cid AND sequence BETWEEN :f{n} AND :l{n} "
                     f"AND is_summary = false) AS s{n}")
    rows = conn.rows(" UNION ALL ".join(reads), params)
    turns = sorted(_messages(rows), key=lambda m: m.sequence or 0)
    return [m for m in turns if scope.allows(m)]


def ids_at(conn: SqlRunner, conversation_id: str, sequences: Sequence[int]) -> dict[int, str]:
    """The stored turns' ids at these sequences (a turn deleted since is missing)."""
    params: dict[str, Any] = {"cid": conversation_id}
    for n, sequence in enumerate(sequences):
        params[f"s{n}"] = sequence
    listed = ", ".join(f":s{n}" for n in range(len(sequences)))
    rows = conn.rows("SELECT sequence, id FROM threadline_messages WHERE conversation_id = :cid "
                     f"AND sequence IN ({listed})", params)
    return {int(row[0]): str(row[1]) for row in rows}


def shown_by_meaning(conn: SqlRunner, conversation_id: str, similar: FoundByMeaning,
                     scope: SearchScope) -> FoundByMeaning:
    """The turns found by meaning that a search in `scope` may show (`FoundByMeaning`), their
    ids read in the search's own read."""
    if not similar.sequences:
        return similar
    ids = ids_at(conn, conversation_id, similar.sequences)
    return similar.shown(lambda s: s in ids and scope.allows_turn(ids[s], s))


def select_latest_summary(
    conn: SqlRunner, conversation_id: str, participant_id: str | None
) -> StoredMessage | None:
    by_whom = "" if participant_id is None else "AND participant_id = :pid "
    rows = conn.rows(
        f"SELECT {SELECT_LIST} FROM threadline_messages WHERE conversation_id = :cid "
        f"AND is_summary = true {by_whom}ORDER BY sequence DESC LIMIT 1",
        {"cid": conversation_id, "pid": participant_id},
    )
    return _messages(rows)[0] if rows else None


def update_content(
    conn: SqlRunner, conversation_id: str, message_id: str, content: str, token_count: int
) -> bool:
    return conn.rowcount(
        "UPDATE threadline_messages SET content = :content, token_count = :tokens, "
        "has_cjk = :cjk WHERE conversation_id = :cid AND id = :id",
        {"content": content, "tokens": token_count, "cid": conversation_id, "id": message_id,
         "cjk": has_cjk(content)},
    ) == 1


def delete_turns(conn: SqlRunner, conversation_id: str, ids: Sequence[str]) -> int:
    if not ids:
        return 0
    names = ", ".join(f":i{n}" for n in range(len(ids)))
    params: dict[str, Any] = {f"i{n}": value for n, value in enumerate(ids)}
    params["cid"] = conversation_id
    deleted = conn.rowcount(
        f"DELETE FROM threadline_messages WHERE conversation_id = :cid AND id IN ({names})",
        params,
    )
    if deleted:
        conn.rowcount(
            "UPDATE threadline_conversations SET message_count = message_count - :n "
            "WHERE conversation_id = :cid",
            {"n": deleted, "cid": conversation_id},
        )
    return deleted


def select_conversations(conn: SqlRunner, limit: int) -> list[ConversationInfo]:
    rows = conn.rows(
        "SELECT conversation_id, message_count, last_activity_us, last_sequence "
        "FROM threadline_conversations ORDER BY last_activity_us DESC LIMIT :limit",
        {"limit": limit},
    )
    return [ConversationInfo(r[0], int(r[1]), from_micros(r[2]), int(r[3])) for r in rows]


def count_turns(conn: SqlRunner, conversation_id: str | None) -> int:
    if conversation_id is None:
        rows = conn.rows(
            "SELECT coalesce(sum(message_count), 0) FROM threadline_conversations", {})
    else:
        rows = conn.rows(
            "SELECT count(*) FROM threadline_messages WHERE conversation_id = :cid",
            {"cid": conversation_id},
        )
    return int(rows[0][0])
