"""The PostgreSQL dialect: a runner on a SQLAlchemy connection (asyncpg) and its full-text
search (tsvector/tsquery, ranked by BM25 computed in SQL).

The tsquery texts are built here and nowhere else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, TextClause, text

from threadline.backends.sql.operations import (
    HIT_KEYS,
    WEIGHING_SAMPLE,
    Params,
    SqlRunner,
    conversation_rows,
    month_factor,
    scoped,
)
from threadline.backends.sql.schema import SELECT_LIST_M
from threadline.history.search import SearchQuery, SearchScope, loose_prefix, stem

_MOMENT = "(to_timestamp(m.ts_us / 1000000.0) AT TIME ZONE 'UTC')"
_YEAR = f"CAST(extract(year FROM {_MOMENT}) AS INTEGER)"
_MONTH = f"CAST(extract(month FROM {_MOMENT}) AS INTEGER)"


def _months(query: SearchQuery, params: dict[str, Any]) -> str:
    return month_factor(query, params, year=_YEAR, month=_MONTH)


@lru_cache(maxsize=512)
def _clause(sql: str) -> TextClause:
    return text(sql)


class _ConversationSizes:
    """How many turns each conversation had at its last search, which picks the next search's
    plan (`conversation_rows`): read in the search's own statement, so it is one search stale
    at most; unknown (a first search in this process) counts as short."""

    def __init__(self, capacity: int = 8192) -> None:
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity

    def get(self, conversation_id: str) -> int:
        return self._sizes.get(conversation_id, 0)

    def remember(self, conversation_id: str, size: int) -> None:
        self._sizes[conversation_id] = size
        self._sizes.move_to_end(conversation_id)
        if len(self._sizes) > self._capacity:
            self._sizes.popitem(last=False)


_sizes = _ConversationSizes()


class AlchemyRunner:
    """A `SqlRunner` on a SQLAlchemy connection (PostgreSQL through asyncpg)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @property
    def dialect(self) -> str:
        return self.connection.dialect.name

    def rows(self, sql: str, params: Params) -> list[Sequence[Any]]:
        return list(self.connection.execute(_clause(sql), dict(params)).all())

    def rowcount(self, sql: str, params: Params) -> int:
        return int(self.connection.execute(_clause(sql), dict(params)).rowcount)

    def ranked(self, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
               columns: str) -> list[Sequence[Any]]:
        """BM25 over the turns matching any word. Counting a common word first costs more than
        it saves here (measured: search p50 12 ms -> 30 ms at a million turns), so every word
        is kept."""
        return _search_postgres(self, conversation_id, query, limit, scope, columns)

    def speakers_ranked(self, keys: Sequence[str], query: SearchQuery, *,
                        exclude_conversation: str, before_us: int,
                        limit: int) -> list[Sequence[Any]]:
        """The person's rows read through the btrees on the speaker keys, ranked by
        `ts_rank` over the stored tsvector (a person has far fewer turns than the table)."""
        words = websearch_text(query)
        if words is None:
            return []
        params: dict[str, Any] = {"cid": exclude_conversation, "before": before_us,
                                  "limit": limit, "q": words}
        names = []
        for n, key in enumerate(keys):
            params[f"k{n}"] = key
            names.append(f":k{n}")
        listed = ", ".join(names)
        return self.rows(
            f"SELECT {SELECT_LIST_M} FROM (SELECT * FROM threadline_messages "
            f"WHERE (speaker_key IN ({listed}) OR speaker_space IN ({listed})) "
            "AND conversation_id <> :cid AND ts_us < :before OFFSET 0) AS m, "
            "websearch_to_tsquery('english', :q) AS q WHERE m.search_vector @@ q "
            "ORDER BY ts_rank(m.search_vector, q) DESC, m.ts_us DESC LIMIT :limit", params)


def websearch_text(query: SearchQuery) -> str | None:
    """Input for PostgreSQL's `websearch_to_tsquery`, which never raises on any text.

    Terms are plain words (the tokenizer already removed every operator character), joined
    with its `or` keyword; phrases are quoted, which it reads as a phrase.
    """
    parts = [f'"{" ".join(p)}"' for p in query.phrases] + list(query.terms)
    return " or ".join(parts) if parts else None


def tsquery_term(term: str, query: SearchQuery) -> tuple[str, str]:
    """(text search configuration, `to_tsquery` text) for one term, a weight letter to follow.

    The term is letters and digits only (the tokenizer's words), quoted, so it never acts as
    tsquery syntax; `english` stems it like the indexed text, and a loose term's stem prefix
    goes through `simple` as a prefix match ("'counsel':*").
    """
    prefix = loose_prefix(term, query, stem)
    return ("english", f"'{term}':") if prefix is None else ("simple", f"'{prefix}':*")


def _search_postgres(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str,
) -> list[Sequence[Any]]:
    """BM25 (each word counted once a turn) over the turns matching any word, as on SQLite.

    `ts_rank_cd` weighs every word alike, so a common word counted as much as a rare one
    (75.6% of LoCoMo's evidence reached against 80.7% with SQLite's BM25). One pass counts in
    how many of the conversation's turns each word appears; the second ranks by those weights,
    the speaker's name counting half, a quoted phrase adding 2 and a named month multiplying.
    """
    rows: list[Sequence[Any]] = []
    if query.terms or query.phrases:
        rows = _bm25_postgres(conn, conversation_id, query, limit, scope, columns)
    if query.trigrams and len(rows) < limit:
        patterns = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for t in query.trigrams]
        found = {row[0] for row in rows}
        params = {"cid": conversation_id, "patterns": patterns, "limit": limit}
        extra = conn.rows(
            f"SELECT {columns} FROM threadline_messages m WHERE conversation_id = :cid "
            f"AND is_summary = false AND content LIKE ANY(:patterns){scoped('m', scope, params)} "
            "ORDER BY (SELECT count(*) FROM unnest(CAST(:patterns AS text[])) p "
            "WHERE m.content LIKE p) DESC, sequence DESC LIMIT :limit", params)
        rows.extend(row for row in extra if row[0] not in found)
    return rows[:limit]


def _bm25_postgres(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str,
) -> list[Sequence[Any]]:
    # Planned for its own values: the store's connections never use generic plans
    # (`PostgresBackend`).
    params: dict[str, Any] = {"cid": conversation_id, "limit": limit,
                              "phrases": websearch_text(replace(query, terms=())) or ""}
    # The queries are built once, in a one-row FROM item (`w`): as expressions they were
    # rebuilt for every row, 2.5x the cost of ranking itself.
    built = ["websearch_to_tsquery('english', :phrases) AS phrase"]
    for n, (config, lexeme) in enumerate(tsquery_term(t, query) for t in query.terms):
        params[f"c{n}"], params[f"a{n}"], params[f"b{n}"] = config, f"{lexeme}A", f"{lexeme}B"
        built.append(f"to_tsquery(CAST(:c{n} AS regconfig), :a{n}) AS text{n}")
        built.append(f"to_tsquery(CAST(:c{n} AS regconfig), :b{n}) AS name{n}")
    terms = range(len(query.terms))
    words = f"w AS (SELECT {', '.join(built)})"
    any_word = " || ".join(["w.phrase", *(f"w.text{n} || w.name{n}" for n in terms)])
    read = "id, sequence, ts_us, search_vector" if columns == HIT_KEYS else "*"
    where = f"m.search_vector @@ ({any_word}){scoped('m', scope, params)}"
    # The weights come from the newest WEIGHING_SAMPLE turns (counting every turn of a very
    # long conversation cost as much as ranking it), counted in the same statement as the
    # ranking (`s`), with the conversation's size, which the next search's plan is picked by.
    params["sample"] = WEIGHING_SAMPLE
    counted = "".join(f", count(*) FILTER (WHERE m.search_vector @@ (w.text{n} || w.name{n})) "
                      f"AS df{n}" for n in terms)
    counts = ("SELECT count(*) AS matched, coalesce(nullif(avg(length(m.search_vector)), 0), 1) "
              "AS average, coalesce((SELECT message_count FROM threadline_conversations "
              f"WHERE conversation_id = :cid), 0) AS turns{counted} "
              "FROM (SELECT id, sequence, search_vector FROM threadline_messages "
              "WHERE conversation_id = :cid ORDER BY sequence DESC LIMIT :sample) AS m, "
              f"w WHERE {where}")
    # Each word's BM25 idf over the sample (a word counted once a turn), computed once.
    size = "greatest(c.matched, least(c.turns, :sample))"
    idf = "".join(f", CAST(ln(1 + ({size} - c.df{n} + 0.5) / (c.df{n} + 0.5)) AS float8) "
                  f"AS idf{n}" for n in terms)
    stats = f"SELECT c.turns, CAST(c.average AS float8) AS average{idf} FROM ({counts}) AS c"
    scores = [f"CASE WHEN m.search_vector @@ w.text{n} THEN s.idf{n} "
              f"WHEN m.search_vector @@ w.name{n} THEN s.idf{n} * 0.5 ELSE 0 END" for n in terms]
    # BM25's saturation and length normalization for a word counted once (k1 1.2, b 0.75).
    length = "2.2 / (1.0 + 1.2 * (0.25 + 0.75 * length(m.search_vector) / s.average))"
    score = (f"(({' + '.join(scores) or '0'}) * {length} "
             "+ CASE WHEN m.search_vector @@ w.phrase THEN 2.0 ELSE 0 END)")
    found = conn.rows(
        f"WITH {words}, s AS ({stats}) SELECT {columns}, s.turns "
        f"FROM {conversation_rows(_sizes.get(conversation_id), read)} AS m, w, s "
        f"WHERE {where} ORDER BY {score}{_months(query, params)} DESC, m.sequence DESC "
        "LIMIT :limit", params)
    if found:
        _sizes.remember(conversation_id, int(found[0][-1]))
    return [row[:-1] for row in found]
