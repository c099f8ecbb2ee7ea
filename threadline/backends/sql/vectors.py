"""The SQL vector index: the only code that knows the table `threadline_vectors`.

One row per embedded turn, keyed like the turn (conversation, sequence), holding the model's
name and the vector's float32 bytes: a SQLite blob, a PostgreSQL `bytea`. Scoring is numpy's
(`threadline.history.similarity`) over the rows of the one conversation asked about, read
through the primary key: recall's scope is a conversation (or one person's turns), never the
whole table, so an approximate nearest-neighbour index over all turns would buy nothing and
would need a filter to keep the scope, while a conversation's thousand 1 KB rows read and
score in a few milliseconds (`bench/vectors.py`).

Why `bytea` and not pgvector: the extension is not installed on the PostgreSQL servers we
run against, and an app cannot install it without superuser rights. With pgvector, the
column would be `vector(256)` and `ORDER BY vector <=> :question LIMIT k` would score in the
database (no bytes shipped to the app); an HNSW index would only help a search over many
conversations at once, which recall never makes.

Deleting or editing a turn deletes its vector by trigger (migration `turn_vectors`), so
every path that deletes turns (forgetting a person, retention, a platform's deletion) covers
vectors without knowing them. `put_many` is idempotent: two workers storing the same turn's
vector by the same model write it once (the second changes nothing); a vector by another model
is replaced.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from threadline.backends.sql.operations import MAX_SPEAKER_KEYS, SqlRunner
from threadline.backends.sql.schema import SELECT_LIST_M, row_to_message, to_micros
from threadline.history.model import Participant, StoredMessage
from threadline.history.similarity import as_matrix, best, checked
from threadline.history.vectors import VectorHit

# The turns that get a vector (as `threadline.history.similarity.embeddable` says).
EMBEDDABLE = "m.is_summary = false AND m.content <> ''"
# A person's newest turns that person memory compares by meaning (their older ones are still
# found by words).
MAX_PERSON_TURNS = 5_000
# How often `unembedded` looks again from the first turn, not only from where it last found
# one: a turn edited since (its vector deleted) or committed late by another process.
RESCAN_SECONDS = 600.0

_PUT = (
    "INSERT INTO threadline_vectors (conversation_id, sequence, model, vector) "
    "SELECT m.conversation_id, m.sequence, :model, {vector} FROM threadline_messages m "
    f"WHERE m.id = :id AND {EMBEDDABLE} "
    "ON CONFLICT (conversation_id, sequence) DO UPDATE SET model = excluded.model, "
    "vector = excluded.vector WHERE threadline_vectors.model <> excluded.model"
)
_UNEMBEDDED = (
    f"SELECT m.row_id, {SELECT_LIST_M} FROM threadline_messages m "
    f"WHERE m.row_id >= :floor AND {EMBEDDABLE} AND NOT EXISTS (SELECT 1 FROM "
    "threadline_vectors v WHERE v.conversation_id = m.conversation_id "
    "AND v.sequence = m.sequence AND v.model = :model) ORDER BY m.row_id LIMIT :limit"
)
_DONE = "SELECT count(*) FROM threadline_vectors WHERE model = :model"
_WANTED = f"SELECT count(*) FROM threadline_messages m WHERE {EMBEDDABLE}"
_CONVERSATION = ("SELECT sequence, vector FROM threadline_vectors "
                 "WHERE conversation_id = :cid AND model = :model")
_SEQUENCES_OF = "SELECT id, sequence FROM threadline_messages WHERE conversation_id = :cid " \
                "AND id IN ({ids})"
_IDS_OF = "SELECT sequence, id FROM threadline_messages WHERE conversation_id = :cid " \
          "AND sequence IN ({sequences})"
_PERSON = (
    f"SELECT v.vector, {SELECT_LIST_M} FROM (SELECT * FROM threadline_messages "
    "WHERE (speaker_key IN ({keys}) OR speaker_space IN ({keys})) AND conversation_id <> :cid "
    "AND ts_us < :before ORDER BY row_id DESC LIMIT :newest) AS m "
    "JOIN threadline_vectors v ON v.conversation_id = m.conversation_id "
    f"AND v.sequence = m.sequence WHERE v.model = :model AND {EMBEDDABLE}"
)


class RunsStatements(Protocol):
    """The conversation store's `run`: a function on a runner, in one transaction."""

    async def run(self, action: str, fn: Any, *args: Any, write: bool = False) -> Any: ...


class SqlVectorIndex:
    """`VectorIndex` in the history's database (see the module docstring)."""

    def __init__(self, store: RunsStatements) -> None:
        self.store = store
        # Per model: the row from which turns may still lack a vector, and when it was set
        # from the first row (see RESCAN_SECONDS). In process only: a restart starts over.
        self._floor: dict[str, tuple[int, float]] = {}

    async def put_many(self, model: str, vectors: Sequence[tuple[str, bytes]]) -> int:
        pairs = [(message_id, checked(vector, message_id=message_id, model=model))
                 for message_id, vector in vectors]
        if not pairs:
            return 0
        stored: int = await self.store.run("store turns' vectors", _put, model, pairs,
                                           write=True)
        return stored

    async def unembedded(self, model: str, *, limit: int) -> list[StoredMessage]:
        floor, since = self._floor.get(model, (0, 0.0))
        now = time.monotonic()
        if now - since > RESCAN_SECONDS:
            floor, since = 0, now
        rows = await self.store.run("find turns without a vector", _rows, _UNEMBEDDED,
                                    {"floor": floor, "model": model, "limit": max(limit, 0)})
        if rows:
            floor = int(rows[0][0])
        self._floor[model] = (floor, since)
        return _messages(rows)

    async def progress(self, model: str) -> tuple[int, int]:
        done, wanted = await self.store.run("count turns' vectors", _progress, model)
        return int(done), int(wanted)

    async def nearest(
        self,
        conversation_id: str,
        vector: bytes,
        model: str,
        *,
        limit: int,
        exclude_ids: Collection[str] = (),
        through_sequence: int | None = None,
    ) -> list[VectorHit]:
        if limit <= 0:
            return []
        hits: list[VectorHit] = await self.store.run(
            "search by meaning", _nearest, conversation_id, vector, model, limit,
            sorted(exclude_ids), through_sequence)
        return hits

    async def nearest_for_speakers(
        self,
        keys: Collection[str],
        vector: bytes,
        model: str,
        *,
        exclude_conversation: str,
        before: datetime,
        limit: int,
    ) -> list[tuple[StoredMessage, float]]:
        if not keys or limit <= 0:
            return []
        found: list[tuple[StoredMessage, float]] = await self.store.run(
            "search a person's turns by meaning", _nearest_for_speakers,
            sorted(keys)[:MAX_SPEAKER_KEYS], vector, model, exclude_conversation,
            to_micros(before), limit)
        return found


def _listed(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    for n, value in enumerate(values):
        params[f"{prefix}{n}"] = value
    return ", ".join(f":{prefix}{n}" for n in range(len(values)))


def _messages(rows: Sequence[Sequence[Any]]) -> list[StoredMessage]:
    """Turns from rows whose first column is something else (a row id, a vector)."""
    participants: dict[tuple[str, str, str], Participant] = {}
    return [row_to_message(row[1:], participants) for row in rows]


def _rows(runner: SqlRunner, sql: str, params: dict[str, Any]) -> list[Sequence[Any]]:
    return runner.rows(sql, params)


def _put(runner: SqlRunner, model: str, pairs: Sequence[tuple[str, bytes]]) -> int:
    sql = _PUT.format(vector="CAST(:vector AS bytea)" if runner.dialect == "postgresql"
                      else ":vector")
    return sum(runner.rowcount(sql, {"model": model, "id": message_id, "vector": vector})
               for message_id, vector in pairs)


def _progress(runner: SqlRunner, model: str) -> tuple[int, int]:
    done = runner.rows(_DONE, {"model": model})[0][0]
    wanted = runner.rows(_WANTED, {})[0][0]
    return int(done), int(wanted)


def _nearest(runner: SqlRunner, conversation_id: str, vector: bytes, model: str, limit: int,
             exclude_ids: Sequence[str], through_sequence: int | None) -> list[VectorHit]:
    """Score the conversation's vectors; the excluded turns and those after
    `through_sequence` are left out before ranking, so they never take a place."""
    params: dict[str, Any] = {"cid": conversation_id}
    excluded: set[int] = set()
    if exclude_ids:
        listed = _listed("x", exclude_ids, params)
        excluded = {int(row[1]) for row in runner.rows(_SEQUENCES_OF.format(ids=listed), params)}
    rows = [row for row in runner.rows(_CONVERSATION, {"cid": conversation_id, "model": model})
            if (through_sequence is None or row[0] <= through_sequence)
            and row[0] not in excluded]
    ranked = best(as_matrix([bytes(row[1]) for row in rows]), vector, limit=limit)
    if not ranked:
        return []
    sequences = [int(rows[index][0]) for index, _ in ranked]
    params = {"cid": conversation_id}
    listed = _listed("s", sequences, params)
    ids = {int(row[0]): str(row[1])
           for row in runner.rows(_IDS_OF.format(sequences=listed), params)}
    return [VectorHit(ids[sequence], sequence, score)
            for sequence, (_, score) in zip(sequences, ranked, strict=True) if sequence in ids]


def _nearest_for_speakers(runner: SqlRunner, keys: Sequence[str], vector: bytes, model: str,
                          exclude_conversation: str, before_us: int, limit: int
                          ) -> list[tuple[StoredMessage, float]]:
    params: dict[str, Any] = {"cid": exclude_conversation, "before": before_us,
                              "newest": MAX_PERSON_TURNS, "model": model}
    rows = runner.rows(_PERSON.format(keys=_listed("k", keys, params)), params)
    ranked = best(as_matrix([bytes(row[0]) for row in rows]), vector, limit=limit)
    turns = _messages([rows[index] for index, _ in ranked])
    return [(turn, score) for turn, (_, score) in zip(turns, ranked, strict=True)]

