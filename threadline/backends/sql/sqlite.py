"""The SQLite dialect: a runner on a raw `sqlite3` connection and its full-text search (FTS5).

Two FTS5 indexes: words (porter stems; the conversation key is an indexed column) and trigrams
(text written without spaces). The MATCH expressions are built here and nowhere else.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import snowballstemmer

from threadline.backends.sql.operations import Params, SqlRunner, month_factor, scoped
from threadline.backends.sql.schema import SELECT_LIST_M
from threadline.history.search import (
    MAX_POSTINGS,
    MAX_RANKED,
    SearchQuery,
    SearchScope,
    conversation_key,
    loose_prefix,
    prune_common,
    single_word,
)

_YEAR = "CAST(strftime('%Y', m.ts_us / 1000000, 'unixepoch') AS INTEGER)"
_MONTH = "CAST(strftime('%m', m.ts_us / 1000000, 'unixepoch') AS INTEGER)"


_WORDS = "threadline_messages_fts"


def _months(query: SearchQuery, params: dict[str, Any]) -> str:
    return month_factor(query, params, year=_YEAR, month=_MONTH)


class WordCounts:
    """How many turns of the whole word index hold a word (see `search_hits`), shared by the
    store's reader threads.

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


class SqliteRunner:
    """A `SqlRunner` on a raw `sqlite3` connection (which caches prepared statements itself)."""

    dialect = "sqlite"

    def __init__(self, connection: sqlite3.Connection, word_counts: WordCounts) -> None:
        self.connection = connection
        self.word_counts = word_counts

    def rows(self, sql: str, params: Params) -> list[Sequence[Any]]:
        return self.connection.execute(sql, params).fetchall()

    def rowcount(self, sql: str, params: Params) -> int:
        return self.connection.execute(sql, params).rowcount

    def ranked(self, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
               columns: str) -> list[Sequence[Any]]:
        """FTS5's bm25() over both indexes, the words most common in the whole index dropped
        first (see `prune_common`): bm25() walks every posting of every query word to weigh
        it."""
        query = prune_common(query, lambda word: _index_count(self, word),
                             max_matches=MAX_POSTINGS)
        return _search_sqlite(self, conversation_id, query, limit, scope, columns)

    def speakers_ranked(self, keys: Sequence[str], query: SearchQuery, *,
                        exclude_conversation: str, before_us: int,
                        limit: int) -> list[Sequence[Any]]:
        """The speaker keys are a column of the word index, AND-ed with the OR-ed words inside
        MATCH as a conversation's key is; only the newest MAX_RANKED matches are ranked
        (pruning the person's own common words first, as a conversation's search does,
        measured slower here: p50 8 -> 14 ms at a million turns)."""
        query = prune_common(query, lambda word: _index_count(self, word),
                             max_matches=MAX_POSTINGS)
        match = fts5_speaker_match(query, keys)
        if match is None:
            return []
        floor = _ranking_floor(self, _WORDS, match)
        return self.rows(
            f"SELECT {SELECT_LIST_M} FROM {_WORDS} JOIN threadline_messages m "
            f"ON m.row_id = {_WORDS}.rowid WHERE {_WORDS} MATCH :match "
            f"AND {_WORDS}.rowid >= :floor AND m.conversation_id <> :cid AND m.ts_us < :before "
            f"ORDER BY bm25({_WORDS}, 0.0, 1.0, 0.5, 0.0) LIMIT :limit",
            {"match": match, "floor": floor or 0, "cid": exclude_conversation,
             "before": before_us, "limit": limit})


@lru_cache(maxsize=1)
def _porter() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("porter")


def porter_stem(word: str) -> str:
    """The stem FTS5's porter tokenizer gives a word (Snowball's English stemmer differs)."""
    return str(_porter().stemWord(word))


def fts5_term(term: str, query: SearchQuery) -> str:
    """One term for FTS5's porter index: exact, or a stem prefix for a loose term."""
    prefix = loose_prefix(term, query, porter_stem)
    return fts5_quoted(term) if prefix is None else fts5_quoted(prefix) + "*"


def fts5_quoted(text: str) -> str:
    """One FTS5 string literal: every character literal, quotes doubled."""
    return '"' + text.replace('"', '""') + '"'


def fts5_word_match(query: SearchQuery, conversation_key: str) -> str | None:
    """The FTS5 MATCH expression for the word index, scoped to one conversation.

    The conversation key is an indexed FTS column, AND-ed with the OR-ed terms: measured at
    1,000,000 rows this is 4 ms p50 where filtering by conversation outside MATCH is 154 ms.
    """
    alternatives = [fts5_quoted(" ".join(p)) for p in query.phrases]
    alternatives += [fts5_term(t, query) for t in query.terms]
    if not alternatives:
        return None
    scope = f"conv_key : {fts5_quoted(conversation_key)}"
    return f"{scope} AND {{content participant_name}} : ({' OR '.join(alternatives)})"


def fts5_speaker_match(query: SearchQuery, keys: Sequence[str]) -> str | None:
    """The MATCH expression for person memory: one of the speaker keys (the word index's
    `speaker` column) AND any of the query's words."""
    alternatives = [fts5_quoted(" ".join(p)) for p in query.phrases]
    alternatives += [fts5_term(t, query) for t in query.terms]
    if not alternatives or not keys:
        return None
    speakers = " OR ".join(fts5_quoted(k) for k in sorted(keys))
    return (f"speaker : ({speakers}) AND {{content participant_name}} : "
            f"({' OR '.join(alternatives)})")


def fts5_trigram_match(query: SearchQuery, conversation_key: str) -> str | None:
    """The FTS5 MATCH expression for the trigram index (text written without spaces)."""
    if not query.trigrams:
        return None
    alternatives = " OR ".join(fts5_quoted(t) for t in query.trigrams)
    return f"conv_key : {fts5_quoted(conversation_key)} AND content : ({alternatives})"


def _search_sqlite(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str,
) -> list[Sequence[Any]]:
    key = conversation_key(conversation_id)
    ranked: list[tuple[float, Sequence[Any]]] = []
    # bm25() weights: conversation key 0, text 1, speaker name 0.5 (a name in the question
    # counts for that participant's turns, but less than the words of the turn itself).
    for table, build, weights in (
        ("threadline_messages_fts", fts5_word_match, "0.0, 1.0, 0.5"),
        ("threadline_messages_trigram", fts5_trigram_match, "0.0, 1.0"),
    ):
        match = build(query, key)
        if match is None:
            continue
        floor = _ranking_floor(conn, table, match)
        if floor is not None and table == "threadline_messages_fts":
            query = prune_common(query, lambda word: _count_matches(
                conn, "threadline_messages_fts", fts5_word_match(single_word(word), key)))
            match = build(query, key)
            floor = _ranking_floor(conn, table, match)
        params = {"match": match, "cid": conversation_id, "limit": limit, "floor": floor or 0}
        rows = conn.rows(
            f"SELECT bm25({table}, {weights}){_months(query, params)} AS rank, "
            f"{columns} "
            f"FROM {table} JOIN threadline_messages m ON m.row_id = {table}.rowid "
            f"WHERE {table} MATCH :match AND {table}.rowid >= :floor "
            f"AND m.conversation_id = :cid{scoped('m', scope, params)} "
            "ORDER BY rank LIMIT :limit", params)
        ranked.extend((row[0], row[1:]) for row in rows)
    ranked.sort(key=lambda item: item[0])
    best: dict[str, Sequence[Any]] = {}
    for _, row in ranked:  # best rank first; a turn found by both indexes keeps its best
        best.setdefault(row[0], row)
    return list(best.values())[:limit]


def _index_count(conn: SqliteRunner, word: str) -> int:
    """Turns of the whole word index holding `word`, remembered in `conn.word_counts`."""
    known = conn.word_counts.get(word)
    if known is None:
        known = _count_matches(conn, "threadline_messages_fts",
                               "{content participant_name} : " + fts5_quoted(word))
        conn.word_counts.put(word, known)
    return known


def _count_matches(conn: SqlRunner, table: str, match: str | None) -> int:
    if match is None:
        return 0
    return int(conn.rows(f"SELECT count(*) FROM {table} WHERE {table} MATCH :match",
                         {"match": match})[0][0])


def _ranking_floor(conn: SqlRunner, table: str, match: str | None) -> int | None:
    """None when few turns match; else the row id above which the newest MAX_RANKED lie.

    Matching is cheap and ranking is not, so a query matching more than MAX_RANKED turns
    ranks only the newest of them (after its common words were dropped, if that was not
    enough).
    """
    rows = conn.rows(f"SELECT rowid FROM {table} WHERE {table} MATCH :match "
                     "ORDER BY rowid DESC LIMIT 1 OFFSET :offset",
                     {"match": match, "offset": MAX_RANKED})
    return int(rows[0][0]) + 1 if rows else None
