"""The PostgreSQL dialect: a runner on an asyncpg connection and its full-text search
(tsvector/tsquery, ranked by BM25 computed in SQL).

The tsquery texts are built here and nowhere else.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import asyncpg
from sqlalchemy.util import await_

from threadline.backends.sql.lexeme_counts import KeptLexemeCounts, english_stems
from threadline.backends.sql.operations import (
    CONVERSATION_SIZE,
    HIT_KEYS,
    LONG_CONVERSATION,
    LONG_RANKED,
    WEIGHING_SAMPLE,
    Params,
    SqlRunner,
    conversation_rows,
    conversation_size,
    conversation_sizes,
    month_factor,
    one_write,
    scoped,
)
from threadline.backends.sql.schema import SELECT_LIST_M
from threadline.history.search import (
    SearchQuery,
    SearchScope,
    loose_prefix,
    prune_common,
    stem,
)

_MOMENT = "(to_timestamp(m.ts_us / 1000000.0) AT TIME ZONE 'UTC')"
_YEAR = f"CAST(extract(year FROM {_MOMENT}) AS INTEGER)"
_MONTH = f"CAST(extract(month FROM {_MOMENT}) AS INTEGER)"


def _months(query: SearchQuery, params: dict[str, Any]) -> str:
    return month_factor(query, params, year=_YEAR, month=_MONTH)


# A `:name` parameter, as SQLAlchemy's `text()` finds one: not a `::type` cast, not an
# escaped `\:name`.
_PARAMETER = re.compile(r"(?<![:\w\x5c]):(\w+)(?![:\w])")


@lru_cache(maxsize=512)
def numbered(sql: str) -> tuple[str, tuple[str, ...]]:
    """`sql` with its `:name` parameters numbered as asyncpg takes them (`$1`, `$2`, a name
    used twice keeping its number), and the names in that order.

    Parameters are found by the rule SQLAlchemy's `text()` uses (`_PARAMETER`), so the
    operations' SQL means on asyncpg what it meant through `text()`: `::casts` stay."""
    names: dict[str, int] = {}

    def number(found: re.Match[str]) -> str:
        return f"${names.setdefault(found.group(1), len(names) + 1)}"

    return _PARAMETER.sub(number, sql), tuple(names)


class PostgresRunner:
    """A `SqlRunner` on an asyncpg connection, with its store's long conversations' word
    counts. Its statements block in the store's greenlet (`PostgresBackend`), which awaits
    them: the operations stay plain functions, written once for both dialects."""

    dialect = "postgresql"

    def __init__(self, connection: asyncpg.Connection, lexemes: KeptLexemeCounts) -> None:
        self.connection = connection
        self.lexemes = lexemes

    def rows(self, sql: str, params: Params) -> list[Sequence[Any]]:
        numbered_sql, names = numbered(sql)
        return await_(self.connection.fetch(numbered_sql, *[params[n] for n in names]))

    def rowcount(self, sql: str, params: Params) -> int:
        """Rows the statement changed, from its status ('UPDATE 3', 'INSERT 0 1'); -1 for a
        statement whose status carries no count."""
        numbered_sql, names = numbered(sql)
        status = await_(self.connection.execute(numbered_sql, *[params[n] for n in names]))
        count = status.rpartition(" ")[2]
        return int(count) if count.isdigit() else -1

    def ranked(self, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
               columns: str) -> list[Sequence[Any]]:
        """BM25 over the turns matching any word. Counting a common word first costs more than
        it saves here (measured: search p50 12 ms -> 30 ms at a million turns), so every word
        is kept, except in a long conversation (a knowledge source's 100,000 sections), where
        ranking every turn matching any of 20 words took seconds: there the words are kept
        rarest first while their postings in the conversation, capped at LONG_COUNTED and
        counted once for all its words (`KeptLexemeCounts`), fit LONG_RANKED."""
        size = conversation_size(self, conversation_id)
        if size <= LONG_CONVERSATION:
            return _search_postgres(self, conversation_id, query, limit, scope, columns)
        counts = self.lexemes.counts(self, conversation_id)
        stems = english_stems(self, [*query.terms, *(w for p in query.phrases for w in p)])

        def postings(word: str) -> int:
            prefix = loose_prefix(word, query, stem)
            if prefix is not None:
                return counts.postings(prefix, prefix=True)
            return counts.postings(stems[word]) if stems.get(word) else 0

        query = prune_common(query, postings, max_matches=LONG_RANKED)
        weights = LongWeights(size, counts.average_length,
                              tuple(postings(term) for term in query.terms))
        return _search_postgres(self, conversation_id, query, limit, scope, columns, weights)

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


@dataclass(frozen=True, slots=True)
class LongWeights:
    """A long conversation's BM25 statistics, known before its search: its turns, their
    average length and each term's postings in the whole table (capped at LONG_COUNTED)."""

    turns: int
    average: int
    postings: tuple[int, ...]

    @property
    def common(self) -> bool:
        """Whether the words may match more than LONG_RANKED turns (then only the newest
        LONG_RANKED matches are ranked, as on SQLite: ranking 30,000 took a second)."""
        return sum(self.postings) > LONG_RANKED


@one_write
def merge_pending_words(runner: SqlRunner) -> None:
    """Merge the words index's pending list (GIN's `fastupdate`: new entries kept in a list
    that every search walks whole, up to 4 MB, until VACUUM or the list's limit merges them).
    Only the index's owner may (a role granted the tables alone leaves it to autovacuum)."""
    runner.rows("SELECT gin_clean_pending_list(c.oid) FROM pg_class c "
                "WHERE c.oid = CAST(:index AS regclass) AND pg_has_role(c.relowner, 'USAGE')",
                {"index": "ix_threadline_messages_search"})


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
    columns: str, weights: LongWeights | None = None,
) -> list[Sequence[Any]]:
    """BM25 (each word counted once a turn) over the turns matching any word, as on SQLite.

    `ts_rank_cd` weighs every word alike, so a common word counted as much as a rare one
    (75.6% of LoCoMo's evidence reached against 80.7% with SQLite's BM25). One pass counts in
    how many of the conversation's turns each word appears; the second ranks by those weights,
    the speaker's name counting half, a quoted phrase adding 2 and a named month multiplying.
    """
    rows: list[Sequence[Any]] = []
    if query.terms or query.phrases:
        rows = _bm25_postgres(conn, conversation_id, query, limit, scope, columns, weights)
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


def _known_stats(weights: LongWeights, params: dict[str, Any]) -> str:
    """The `s` row of `_bm25_postgres` from a long conversation's known statistics: reading
    its newest WEIGHING_SAMPLE turns to weigh the words took longer than the ranking."""
    params["turns"], params["average"] = weights.turns, float(weights.average)
    idf = ""
    for n, postings in enumerate(weights.postings):
        params[f"idf{n}"] = math.log(1 + (weights.turns - postings + 0.5) / (postings + 0.5))
        idf += f", CAST(:idf{n} AS float8) AS idf{n}"
    return f"SELECT CAST(:turns AS bigint) AS turns, CAST(:average AS float8) AS average{idf}"


def _bm25_postgres(
    conn: SqlRunner, conversation_id: str, query: SearchQuery, limit: int, scope: SearchScope,
    columns: str, weights: LongWeights | None,
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
              f"AS average, {CONVERSATION_SIZE} AS turns{counted} "
              "FROM (SELECT id, sequence, search_vector FROM threadline_messages "
              "WHERE conversation_id = :cid ORDER BY sequence DESC LIMIT :sample) AS m, "
              f"w WHERE {where}")
    # Each word's BM25 idf over the sample (a word counted once a turn), computed once.
    size = "greatest(c.matched, least(c.turns, :sample))"
    idf = "".join(f", CAST(ln(1 + ({size} - c.df{n} + 0.5) / (c.df{n} + 0.5)) AS float8) "
                  f"AS idf{n}" for n in terms)
    stats = f"SELECT c.turns, CAST(c.average AS float8) AS average{idf} FROM ({counts}) AS c"
    if weights is not None:  # a long conversation's: known, bound as values
        stats = _known_stats(weights, params)
    scores = [f"CASE WHEN m.search_vector @@ w.text{n} THEN s.idf{n} "
              f"WHEN m.search_vector @@ w.name{n} THEN s.idf{n} * 0.5 ELSE 0 END" for n in terms]
    # BM25's saturation and length normalization for a word counted once (k1 1.2, b 0.75).
    length = "2.2 / (1.0 + 1.2 * (0.25 + 0.75 * length(m.search_vector) / s.average))"
    score = (f"(({' + '.join(scores) or '0'}) * {length} "
             "+ CASE WHEN m.search_vector @@ w.phrase THEN 2.0 ELSE 0 END)")
    if weights is not None:
        found = conn.rows(_long_ranking(query, params, scope, columns, weights, words=words,
                                        stats=stats, score=score), params)
    else:
        rows = conversation_rows(conversation_size(conn, conversation_id), read)
        found = conn.rows(
            f"WITH {words}, s AS MATERIALIZED ({stats}) SELECT {columns}, s.turns "
            f"FROM {rows} AS m, w, s "
            f"WHERE {where} ORDER BY {score}{_months(query, params)} DESC, m.sequence DESC "
            "LIMIT :limit", params)
    if found:
        conversation_sizes.remember(conversation_id, int(found[0][-1]))
    return [row[:-1] for row in found]


def _long_ranking(query: SearchQuery, params: dict[str, Any], scope: SearchScope, columns: str,
                  weights: LongWeights, *, words: str, stats: str, score: str) -> str:
    """The ranking statement of a long conversation (`_bm25_postgres`'s `words`, `stats` and
    `score`), which reads each matched turn's tsvector once.

    A turn's tsvector is stored out of line (TOAST), and each of the score's tests read it
    again: ranking 857 matches of five words took 24 ms beside 14 ms to find them. Here the
    matches are found by the words without their weights (the column holds weights A and B
    only, so it is the same test, and GIN answers it without reading the rows), each matched
    tsvector is read once into a copy (`|| ''`) behind an `OFFSET 0` fence (else PostgreSQL
    would fold the copy back into every test), ranked, and only the best `:limit` turns are
    then read whole. When the words may match more than LONG_RANKED turns, only the newest
    LONG_RANKED matches are ranked."""
    plain = ["websearch_to_tsquery('english', :phrases)"]
    for n, (_, lexeme) in enumerate(tsquery_term(t, query) for t in query.terms):
        params[f"p{n}"] = lexeme.removesuffix(":")
        plain.append(f"to_tsquery(CAST(:c{n} AS regconfig), :p{n})")
    matched = ("SELECT m.row_id, m.sequence, m.ts_us, m.search_vector FROM threadline_messages "
               f"AS m WHERE m.conversation_id = :cid AND m.search_vector @@ ({' || '.join(plain)})"
               f"{scoped('m', scope, params)}")
    if weights.common:  # the newest picked before any tsvector is read (1,994 read for 1,000)
        params["ranked"] = LONG_RANKED
        matched = f"SELECT * FROM ({matched} ORDER BY m.sequence DESC LIMIT :ranked) AS m"
    matched = (f"SELECT m.row_id, m.sequence, m.ts_us, m.search_vector || CAST('' AS tsvector) "
               f"AS search_vector FROM ({matched}) AS m OFFSET 0")
    best = (f"SELECT m.row_id, {score}{_months(query, params)} AS score FROM ({matched}) AS m, "
            "w, s ORDER BY score DESC, m.sequence DESC LIMIT :limit")
    return (f"WITH {words}, s AS MATERIALIZED ({stats}) SELECT {columns}, s.turns "
            f"FROM s, ({best}) AS b JOIN threadline_messages AS m ON m.row_id = b.row_id "
            "ORDER BY b.score DESC, m.sequence DESC")
