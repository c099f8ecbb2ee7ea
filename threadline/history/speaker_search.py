"""Search among the turns one person wrote, across conversations (person memory's read).

The caller gives index keys (`threadline.history.speakers`) it derived from the person and the
conversation being answered, never from model input: a person's `speaker_key`s in a DM, their
`speaker_space` keys for the asking conversation's workspace in a group. Only turns carrying
one of those keys can come back, and never turns of the asking conversation itself (recall
searches that one, with its neighbours).

On SQLite the keys are a column of the word index, AND-ed with the OR-ed words inside MATCH,
as a conversation's key is (`fts5_word_match`); on PostgreSQL the person's rows are read
through the btree on the keys and ranked by `ts_rank` over the stored tsvector.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from threadline.history import sql_operations as ops
from threadline.history.model import Participant, StoredMessage
from threadline.history.search import (
    MAX_POSTINGS,
    SearchQuery,
    fts5_quoted,
    fts5_term,
    prune_common,
    websearch_text,
)
from threadline.history.sql_schema import SELECT_LIST_M, row_to_message

MAX_KEYS = 64
WORD_INDEX = "threadline_messages_fts"


def speaker_match(query: SearchQuery, keys: Collection[str]) -> str | None:
    """The FTS5 MATCH expression: one of the speaker keys AND any of the query's words."""
    alternatives = [fts5_quoted(" ".join(p)) for p in query.phrases]
    alternatives += [fts5_term(t, query) for t in query.terms]
    if not alternatives or not keys:
        return None
    speakers = " OR ".join(fts5_quoted(k) for k in sorted(keys))
    return (f"speaker : ({speakers}) AND {{content participant_name}} : "
            f"({' OR '.join(alternatives)})")


def search_speakers_sql(
    conn: ops.SqlRunner, keys: Sequence[str], query: SearchQuery, *, exclude_conversation: str,
    before_us: int, limit: int,
) -> list[StoredMessage]:
    """The best-ranked turns carrying one of `keys`, outside `exclude_conversation`, said
    before `before_us` (a channel post is also its reply thread's first turn: the question
    being answered must not come back as its own memory)."""
    if not keys or limit <= 0:
        return []
    keys = list(keys)[:MAX_KEYS]
    params: dict[str, Any] = {"cid": exclude_conversation, "limit": limit, "before": before_us}
    if isinstance(conn, ops.SqliteRunner):
        sqlite = conn
        query = prune_common(query, lambda word: ops.index_count(sqlite, word),
                             max_matches=MAX_POSTINGS)
        match = speaker_match(query, keys)
        if match is None:
            return []
        # Matching is cheap and ranking is not: only the newest MAX_RANKED matches are ranked
        # (pruning the person's common words first, as a conversation's search does, measured
        # slower here: p50 8 -> 14 ms at a million turns).
        floor = ops.ranking_floor(conn, WORD_INDEX, match)
        params["match"], params["floor"] = match, floor or 0
        rows = conn.rows(
            f"SELECT {SELECT_LIST_M} FROM threadline_messages_fts "
            "JOIN threadline_messages m ON m.row_id = threadline_messages_fts.rowid "
            "WHERE threadline_messages_fts MATCH :match AND m.conversation_id <> :cid "
            "AND threadline_messages_fts.rowid >= :floor AND m.ts_us < :before "
            "ORDER BY bm25(threadline_messages_fts, 0.0, 1.0, 0.5, 0.0) LIMIT :limit", params)
    else:
        text = websearch_text(query)
        if text is None:
            return []
        names = []
        for n, key in enumerate(keys):
            params[f"k{n}"] = key
            names.append(f":k{n}")
        listed = ", ".join(names)
        params["q"] = text
        rows = conn.rows(
            f"SELECT {SELECT_LIST_M} FROM (SELECT * FROM threadline_messages "
            f"WHERE (speaker_key IN ({listed}) OR speaker_space IN ({listed})) "
            "AND conversation_id <> :cid AND ts_us < :before OFFSET 0) AS m, "
            "websearch_to_tsquery('english', :q) AS q WHERE m.search_vector @@ q "
            "ORDER BY ts_rank(m.search_vector, q) DESC, m.ts_us DESC LIMIT :limit", params)
    participants: dict[tuple[str, str, str], Participant] = {}
    return [row_to_message(row, participants) for row in rows]
