"""The SQLite dialect: a runner on a raw `sqlite3` connection and its full-text search (FTS5).

Two FTS5 indexes: words (porter stems; the conversation key is an indexed column) and trigrams
(text written without spaces). The MATCH expressions are built here and nowhere else.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import snowballstemmer

from threadline.backends.sql.operations import (
    CONVERSATION_SIZE,
    FEW_ROWS_READ,
    LONG_CONVERSATION,
    LONG_COUNTED,
    LONG_RANKED,
    Params,
    SqlRunner,
    WordCounts,
    conversation_size,
    conversation_sizes,
    month_factor,
    scoped,
)
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
# A long conversation's search reads this many times its limit of the index's best matches
# (see `_ranking`).
HEAD_SHARE = 4
_TRIGRAMS = "threadline_messages_trigram"
# Leaf pages one step of merging an index's segments writes at most (about 30 ms a step here):
# other writes wait for a step, never for the whole merge.
MERGE_PAGES = 500


# Turns of the whole word index a search on the event loop may weigh at most: bm25() walks
# every posting of every query word once (about 40 ns each, 3 ms for a word in 77,000 turns),
# so 0.4 ms at most, what the loop spends reading FEW_ROWS_READ turns.
FEW_POSTINGS = 10_000


def searches_few(runner: SqliteRunner, conversation_id: str, query: SearchQuery) -> bool:
    """Whether a search of one conversation costs no more than a read of a few rows, so it
    runs on the event loop (`SqliteBackend.read_few`) instead of costing a hop to a reader
    thread and the GIL traded with it at every statement, which cost more than the search
    (bench/turn_walk.py, alternated on a loaded 2-core machine: p50 4.3 -> 3.5 ms a turn).

    Every word of the query is counted (`WordCounts`), in at most FEW_POSTINGS turns of the
    whole index together, and the conversation holds at most FEW_ROWS_READ turns, read now
    (one statement, `runner` being the loop's): its words' ranking and its windows read no
    more (80 turns every one of which matched took 0.6 ms to rank here, and ranking costs 5
    to 10 us a match: 2 ms at most). A word not counted yet, and a search of the trigram index
    (whose postings nobody counts), go to a reader thread, which counts them for the next
    search.
    """
    if query.trigrams:
        return False
    postings = 0
    for word in {*query.terms, *(word for phrase in query.phrases for word in phrase)}:
        count = runner.word_counts.get(word)
        if count is None:
            return False
        postings += count
    if postings > FEW_POSTINGS:
        return False
    size = int(runner.rows(f"SELECT {CONVERSATION_SIZE}", {"cid": conversation_id})[0][0])
    conversation_sizes.remember(conversation_id, size)
    return size <= FEW_ROWS_READ


def _months(query: SearchQuery, params: dict[str, Any]) -> str:
    return month_factor(query, params, year=_YEAR, month=_MONTH)


class SqliteRunner:
    """A `SqlRunner` on a raw `sqlite3` connection (which caches prepared statements itself)."""

    dialect = "sqlite"

    def __init__(self, connection: sqlite3.Connection, word_counts: WordCounts,
                 capped_counts: WordCounts) -> None:
        self.connection = connection
        self.word_counts = word_counts
        self.capped_counts = capped_counts

    def rows(self, sql: str, params: Params) -> list[Sequence[Any]]:
        return self.connection.execute(sql, params).fetchall()

    def rowcount(self, sql: str, params: Params) -> int:
        return self.connection.execute(sql, params).rowcount

    def ranked(self, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
               columns: str) -> list[Sequence[Any]]:
        """FTS5's bm25() over both indexes, the words most common in the whole index dropped
        first (see `prune_common`): bm25() walks every posting of every query word to weigh
        it."""
        if conversation_size(self, conversation_id) > LONG_CONVERSATION:
            return _search_sqlite(self, conversation_id, query, limit, scope, columns,
                                  long=True)
        query = prune_common(query, lambda word: _index_count(self, word),
                             max_matches=MAX_POSTINGS)
        return _search_sqlite(self, conversation_id, query, limit, scope, columns, long=False)

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


def merge_segments_step(runner: SqliteRunner, started: bool) -> bool:
    """One step of merging each FTS5 index's segments into one (FTS5's incremental optimize:
    a negative page count starts it, a positive one goes on with it); whether it merged
    anything, so the caller knows when to stop.

    Every transaction that writes turns leaves a segment, which FTS5 merges only four at a
    level at a time: a knowledge source of 100,000 sections was left in 10 segments, and every
    search's every word was looked up in each of them (process CPU about 13 -> 12 ms a
    knowledge search once merged, the same sections found)."""
    before = runner.connection.total_changes
    pages = MERGE_PAGES if started else -MERGE_PAGES
    for table in (_WORDS, _TRIGRAMS):
        runner.rowcount(f"INSERT INTO {table}({table}, rank) VALUES ('merge', :pages)",
                        {"pages": pages})
    # Each command is a change itself; only the pages it wrote say it did something.
    return runner.connection.total_changes - before > 2


_per_thread = threading.local()


def _porter() -> snowballstemmer.stemmer:
    """This thread's porter stemmer: a Snowball stemmer keeps the word it is working on in
    itself, and the store's reader threads search at once (a knowledge search runs its
    queries together; one shared stemmer raised IndexError)."""
    stemmer: snowballstemmer.stemmer | None = getattr(_per_thread, "porter", None)
    if stemmer is None:
        stemmer = _per_thread.porter = snowballstemmer.stemmer("porter")
    return stemmer


@lru_cache(maxsize=200_000)
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
    words = fts5_words(query)
    if words is None:
        return None
    return f"conv_key : {fts5_quoted(conversation_key)} AND {words}"


def fts5_words(query: SearchQuery) -> str | None:
    """The FTS5 MATCH expression for the query's words in the word index, any conversation."""
    alternatives = [fts5_quoted(" ".join(p)) for p in query.phrases]
    alternatives += [fts5_term(t, query) for t in query.terms]
    if not alternatives:
        return None
    return f"{{content participant_name}} : ({' OR '.join(alternatives)})"


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
    conn: SqliteRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str, *, long: bool,
) -> list[Sequence[Any]]:
    """Both indexes' best rows for one conversation, best first; a long conversation's words
    are matched by `_long_words`, any other's by `_scoped_words`. The conversation's size is
    read in the ranking statement and picks the plan of its next search."""
    key = conversation_key(conversation_id)
    # A conversation of at most MAX_RANKED turns has no more matches than that: no floor is
    # looked for (its statement walked the conversation's matches for nothing, 0.4 ms of a
    # plain turn's recall). Its size is its last search's (`conversation_size`): one search
    # stale at most, which at worst ranks every match once instead of the newest.
    few = conversation_size(conn, conversation_id) <= MAX_RANKED
    ranked: list[tuple[float, Sequence[Any]]] = []
    # bm25() weights: conversation key 0, text 1, speaker name 0.5 (a name in the question
    # counts for that participant's turns, but less than the words of the turn itself).
    for table, weights in ((_WORDS, "0.0, 1.0, 0.5"), (_TRIGRAMS, "0.0, 1.0")):
        if table == _TRIGRAMS:
            match = fts5_trigram_match(query, key)
            floor = (_ranking_floor(conn, table, match)
                     if match is not None and not few else None)
        elif long:
            query, match, floor = _long_words(conn, query)
        else:
            query, match, floor = _scoped_words(conn, query, key, few=few)
        if match is None:
            continue
        params = {"match": match, "cid": conversation_id, "limit": limit, "floor": floor or 0}
        head = limit * HEAD_SHARE if long and table == _WORDS and not query.months else None
        rows = _ranking(conn, table, weights, query, dict(params), columns, scope, head=head)
        if head is not None and len(rows) < limit:  # the index's best were others' turns
            rows = _ranking(conn, table, weights, query, params, columns, scope, head=None)
        if rows:
            conversation_sizes.remember(conversation_id, int(rows[0][-1]))
        ranked.extend((row[0], row[1:-1]) for row in rows)
    ranked.sort(key=lambda item: item[0])
    best: dict[str, Sequence[Any]] = {}
    for _, row in ranked:  # best rank first; a turn found by both indexes keeps its best
        best.setdefault(row[0], row)
    return list(best.values())[:limit]


def _ranking(conn: SqlRunner, table: str, weights: str, query: SearchQuery,
             params: dict[str, Any], columns: str, scope: SearchScope, *, head: int | None
             ) -> list[Sequence[Any]]:
    """The conversation's best `:limit` rows of `table` for `:match`, best first: (rank,
    `columns`..., the conversation's size).

    With `head`, only the index's `head` best matches are read from the turns' table: a long
    conversation's search ranked its matches (up to LONG_RANKED) with every column of each,
    read from rows spread over the whole table (p50 4.6 ms against 1.4 ms this way, at
    100,000 sections). They are the conversation's best exactly when at least `:limit` of
    them are its own; the caller asks again without `head` when fewer are."""
    if head is None:
        source = (f"{table} JOIN threadline_messages m ON m.row_id = {table}.rowid "
                  f"WHERE {table} MATCH :match AND {table}.rowid >= :floor AND")
        rank = f"bm25({table}, {weights})"
    else:
        params["head"] = head
        source = (f"(SELECT rowid, bm25({table}, {weights}) AS rank FROM {table} "
                  f"WHERE {table} MATCH :match AND rowid >= :floor ORDER BY rank LIMIT :head) "
                  "AS t JOIN threadline_messages m ON m.row_id = t.rowid WHERE")
        rank = "t.rank"
    return conn.rows(
        f"SELECT {rank}{_months(query, params)} AS rank, {columns}, {CONVERSATION_SIZE} "
        f"AS turns FROM {source} m.conversation_id = :cid{scoped('m', scope, params)} "
        "ORDER BY rank LIMIT :limit", params)


def _scoped_words(conn: SqlRunner, query: SearchQuery, key: str, *, few: bool
                  ) -> tuple[SearchQuery, str | None, int | None]:
    """(query, MATCH, ranking floor) for a conversation's words, the conversation's key inside
    MATCH; when more than MAX_RANKED of its turns match, the words most common in it are
    dropped first (`prune_common`, counted in the conversation). `few`: the conversation has
    no more turns than MAX_RANKED."""
    match = fts5_word_match(query, key)
    if match is None or few:
        return query, match, None
    floor = _ranking_floor(conn, _WORDS, match)
    if floor is not None:
        query = prune_common(query, lambda word: _count_matches(
            conn, _WORDS, fts5_word_match(single_word(word), key)))
        match = fts5_word_match(query, key)
        floor = _ranking_floor(conn, _WORDS, match) if match is not None else None
    return query, match, floor


def _long_words(conn: SqliteRunner, query: SearchQuery
                ) -> tuple[SearchQuery, str | None, int | None]:
    """(query, MATCH, ranking floor) for a long conversation's words (a knowledge source's
    100,000 sections), the conversation filtered outside MATCH.

    Inside MATCH, its key is a term with one posting per turn, which bm25() walks whole to
    weigh it (20 ms at 100,000 turns, against 1.7 ms for the words alone), and every count by
    conversation walks it again. Here the words are kept rarest first while their postings in
    the whole index fit LONG_RANKED, so what is ranked is bounded whatever the conversation's
    share of the index: no statement walks the conversation. Postings are counted as the
    words are matched (a loose word by its stem's prefix: counted as the exact word,
    "consideration" passed as 284 turns while "consid"* matched over 4,000, and a search ranked
    up to 32,000 matches) up to LONG_COUNTED (`_capped_count`): a
    common word's exact count walked 37,000 postings in 23 ms, and words past the cap are
    dropped anyway unless every word is (then the first in alphabetical order among them is
    kept)."""
    query = prune_common(query, lambda word: _capped_count(conn, fts5_term(word, query)),
                         max_matches=LONG_RANKED)
    match = fts5_words(query)
    if match is None:
        return query, None, None
    # The counts just taken bound the matches: only past LONG_RANKED is a floor looked for.
    bound = sum(_capped_count(conn, fts5_term(term, query)) for term in query.terms) + sum(
        min(_capped_count(conn, fts5_quoted(word)) for word in phrase)
        for phrase in query.phrases)
    if bound <= LONG_RANKED:
        return query, match, None
    return query, match, _ranking_floor(conn, _WORDS, match, ranked=LONG_RANKED)


def _index_count(conn: SqliteRunner, word: str) -> int:
    """Turns of the whole word index holding `word`, remembered in `conn.word_counts`."""
    known = conn.word_counts.get(word)
    if known is None:
        known = _count_matches(conn, _WORDS,
                               "{content participant_name} : " + fts5_quoted(word))
        conn.word_counts.put(word, known)
    return known


def _capped_count(conn: SqliteRunner, term: str) -> int:
    """Turns of the whole word index matching the FTS5 `term` (a quoted word, or a stem
    prefix), counted up to LONG_COUNTED, remembered in `conn.capped_counts` (or taken from an
    exact count of a word remembered)."""
    word = term[1:-1].replace('""', '"') if term.endswith('"') else None
    exact = conn.word_counts.get(word) if word is not None else None
    if exact is not None:
        return min(exact, LONG_COUNTED)
    known = conn.capped_counts.get(term)
    if known is None:
        known = int(conn.rows(
            f"SELECT count(*) FROM (SELECT rowid FROM {_WORDS} WHERE {_WORDS} MATCH :match "
            "LIMIT :cap)", {"match": "{content participant_name} : " + term,
                            "cap": LONG_COUNTED})[0][0])
        conn.capped_counts.put(term, known)
    return known


def _count_matches(conn: SqlRunner, table: str, match: str | None) -> int:
    if match is None:
        return 0
    return int(conn.rows(f"SELECT count(*) FROM {table} WHERE {table} MATCH :match",
                         {"match": match})[0][0])


def _ranking_floor(conn: SqlRunner, table: str, match: str, *, ranked: int = MAX_RANKED
                   ) -> int | None:
    """None when few turns match; else the row id above which the newest `ranked` lie.

    Matching is cheap and ranking is not, so a query matching more than MAX_RANKED turns
    ranks only the newest of them (after its common words were dropped, if that was not
    enough).
    """
    rows = conn.rows(f"SELECT rowid FROM {table} WHERE {table} MATCH :match "
                     "ORDER BY rowid DESC LIMIT 1 OFFSET :offset",
                     {"match": match, "offset": ranked})
    return int(rows[0][0]) + 1 if rows else None
