"""The SQL vector index: the only code that knows the table `threadline_vectors`.

One row per embedded turn, keyed like the turn (conversation, sequence), holding the model's
name and the vector's bytes (float16: see `conversation_vectors`): a SQLite blob in a table
clustered by that key (WITHOUT ROWID, so a conversation's vectors are read in one range), a
PostgreSQL `bytea` read through a covering index by conversation (the same effect: an
index-only scan of adjacent pages). Scoring is numpy's
(`threadline.history.similarity`) over the rows of the one conversation asked about, read
through the primary key: recall's scope is a conversation (or one person's turns), never the
whole table, so an approximate nearest-neighbour index over all turns would buy nothing and
would need a filter to keep the scope, while a conversation's thousand 1 KB rows score in
0.1 ms. Reading them is the cost, so the conversations searched last are kept in process
(`conversation_vectors`); figures in `bench/vectors.py`.

Why `bytea` and not pgvector: the extension is not installed on the PostgreSQL servers we
run against, and an app cannot install it without superuser rights. With pgvector, the
column would be `vector(256)` and `ORDER BY vector <=> :question LIMIT k` would score in the
database (no bytes shipped to the app); an HNSW index would only help a search over many
conversations at once, which recall never makes.

Deleting or editing a turn deletes its vector by trigger (migration `turn_vectors`), so
every path that deletes turns (forgetting a person, retention, a platform's deletion) covers
vectors without knowing them. `put_many` is idempotent: two workers storing the same turn's
vector by the same model write it once (the second changes nothing); a vector by another model
is replaced. `unembedded` walks the turns in row order a window at a time from where it last
found one, so a fully indexed database of a million turns costs the background indexer one
small read per wake, not a scan; edited turns it has heard of come first, wherever the walk
stands, and the walk starts again from the first row every RESCAN_SECONDS for what it cannot
hear (a turn another process committed out of row order, a SQLite turn another process
edited); a restart walks from the first row anyway.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from threadline.backends.sql.conversation_vectors import (
    ConversationVectors,
    VectorCache,
    stored_form,
    stored_matrix,
)
from threadline.backends.sql.operations import (
    FEW_ROWS_READ,
    FEW_TURNS_WRITTEN,
    MAX_SPEAKER_KEYS,
    SqlRunner,
    ids_at,
)
from threadline.backends.sql.schema import SELECT_LIST_M, row_to_message, to_micros
from threadline.history.changes import ChangeListener, HistoryChange, Unsubscribe
from threadline.history.model import StoredMessage
from threadline.history.similarity import best, checked
from threadline.history.vectors import VectorHit

# The turns that get a vector (as `threadline.history.similarity.embeddable` says).
EMBEDDABLE = "m.is_summary = false AND m.content <> ''"
# A person's newest turns that person memory compares by meaning (their older ones are still
# found by words).
MAX_PERSON_TURNS = 5_000
# Vectors stored by one statement (two bound values each, well under every driver's limit).
PUT_CHUNK = 500
# Turns `unembedded` reads per step of its walk (in row order, through the primary key).
WINDOW = 10_000
# How often `unembedded` walks again from the first turn, not only from where it last found
# one: a turn edited since (its vector deleted) or committed late by another process.
RESCAN_SECONDS = 600.0

# One statement per batch: the (id, vector) pairs as a VALUES list joined to their turns.
_PUT = (
    "INSERT INTO threadline_vectors (conversation_id, sequence, model, vector) "
    "SELECT m.conversation_id, m.sequence, :model, v.column2 FROM ({values}) AS v "
    f"JOIN threadline_messages m ON m.id = v.column1 WHERE {EMBEDDABLE} "
    "ON CONFLICT (conversation_id, sequence) DO UPDATE SET model = excluded.model, "
    "vector = excluded.vector WHERE threadline_vectors.model <> excluded.model "
    "RETURNING conversation_id, sequence, vector"
)
_WINDOW_END = ("SELECT max(row_id) FROM (SELECT row_id FROM threadline_messages "
               "WHERE row_id >= :floor ORDER BY row_id LIMIT :window) AS w")
_UNEMBEDDED = (
    f"SELECT m.row_id, {SELECT_LIST_M} FROM threadline_messages m "
    f"WHERE m.row_id BETWEEN :floor AND :last AND {EMBEDDABLE} AND NOT EXISTS (SELECT 1 FROM "
    "threadline_vectors v WHERE v.conversation_id = m.conversation_id "
    "AND v.sequence = m.sequence AND v.model = :model) ORDER BY m.row_id LIMIT :limit"
)
_EDITED = (
    f"SELECT m.row_id, {SELECT_LIST_M} FROM threadline_messages m WHERE m.id IN ({{ids}}) "
    f"AND {EMBEDDABLE} AND NOT EXISTS (SELECT 1 FROM threadline_vectors v WHERE "
    "v.conversation_id = m.conversation_id AND v.sequence = m.sequence AND v.model = :model)"
)
_DONE = "SELECT count(*) FROM threadline_vectors WHERE model = :model"
_WANTED = f"SELECT count(*) FROM threadline_messages m WHERE {EMBEDDABLE}"
_CONVERSATION = ("SELECT sequence, vector FROM threadline_vectors "
                 "WHERE conversation_id = :cid AND model = :model")
_PERSON = (
    f"SELECT v.vector, {SELECT_LIST_M} FROM (SELECT * FROM threadline_messages "
    "WHERE (speaker_key IN ({keys}) OR speaker_space IN ({keys})) AND conversation_id <> :cid "
    "AND ts_us < :before ORDER BY row_id DESC LIMIT :newest) AS m "
    "JOIN threadline_vectors v ON v.conversation_id = m.conversation_id "
    f"AND v.sequence = m.sequence WHERE v.model = :model AND {EMBEDDABLE}"
)


class SqlHistory(Protocol):
    """What the index uses of the conversation store: its `run` (a function on a runner, in
    one transaction, on the store's threads and connections) and its change notifications."""

    async def run(self, action: str, fn: Any, *args: Any, write: bool = False,
                  few: bool = False) -> Any: ...

    def subscribe(self, callback: ChangeListener, conversation_id: str | None = None
                  ) -> Unsubscribe: ...


class SqlVectorIndex:
    """`VectorIndex` in the history's database (see the module docstring)."""

    def __init__(self, store: SqlHistory, *, cache: VectorCache | None = None) -> None:
        self.store = store
        self.cache = cache or VectorCache()
        store.subscribe(self._heard)
        # Per model: the row from which turns may still lack a vector, and when the walk last
        # started from the first row (see RESCAN_SECONDS). In process only: a restart starts
        # over.
        self._floor: dict[str, tuple[int, float]] = {}
        # Turns edited since the last `unembedded` (their vectors were deleted): looked up
        # first, wherever the walk stands.
        self._edited: set[str] = set()

    def _heard(self, change: HistoryChange) -> None:
        self.cache.heard(change)
        if change.kind == "edit":
            self._edited.update(change.message_ids)

    async def put_many(self, model: str, vectors: Sequence[tuple[str, bytes]]) -> int:
        # One vector per turn (the last given), as one row can be written once per statement.
        pairs = list({message_id: checked(vector, message_id=message_id, model=model)
                      for message_id, vector in vectors}.items())
        stored = 0
        for start in range(0, len(pairs), PUT_CHUNK):
            chunk = pairs[start:start + PUT_CHUNK]
            written: list[Sequence[Any]] = await self.store.run(
                "store turns' vectors", _put, model, chunk, write=True,
                few=len(chunk) <= FEW_TURNS_WRITTEN)
            by_conversation: dict[str, list[Sequence[Any]]] = {}
            for conversation_id, sequence, vector in written:
                by_conversation.setdefault(str(conversation_id), []).append((sequence, vector))
            for conversation_id, rows in by_conversation.items():
                self.cache.extend(conversation_id, model, rows)
            stored += len(written)
        return stored

    async def unembedded(self, model: str, *, limit: int) -> list[StoredMessage]:
        floor, since = self._floor.get(model, (0, 0.0))
        now = time.monotonic()
        if now - since > RESCAN_SECONDS:
            floor, since = 0, now
        found: list[Sequence[Any]] = []
        if self._edited:
            edited, self._edited = sorted(self._edited), set()
            found += await self.store.run("find edited turns", _edited_turns, model,
                                          edited[:limit])
            self._edited.update(edited[limit:])
        first_walked = len(found)
        while len(found) < limit:
            rows, last = await self.store.run("find turns without a vector", _unembedded,
                                              model, floor, limit - len(found))
            if last is None:
                break
            if len(found) == first_walked and not rows:
                self._floor[model] = (last + 1, since)  # all before it have a vector
            found += rows
            floor = last + 1
        if len(found) > first_walked:
            self._floor[model] = (int(found[first_walked][0]), since)
        return _messages(found)

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
        """The nearest places (`nearest_places`), enough more that the excluded turns never
        take a place, with their turns' ids read (a turn deleted since is left out)."""
        if limit <= 0:
            return []
        excluded = frozenset(exclude_ids)
        places = await self.nearest_places(conversation_id, vector, model,
                                           limit=limit + len(excluded),
                                           through_sequence=through_sequence)
        if not places:
            return []
        ids: dict[int, str] = await self.store.run(
            "read the turns found by meaning", ids_at, conversation_id,
            [sequence for sequence, _ in places])
        hits = [VectorHit(ids[sequence], sequence, score) for sequence, score in places
                if sequence in ids and ids[sequence] not in excluded]
        return hits[:limit]

    async def nearest_places(
        self,
        conversation_id: str,
        vector: bytes,
        model: str,
        *,
        limit: int,
        through_sequence: int | None = None,
    ) -> list[tuple[int, float]]:
        """Scores the conversation's vectors (cached, or read once); the turns after
        `through_sequence` are left out before ranking."""
        if limit <= 0:
            return []
        [places] = (await self._vectors(conversation_id, model)).nearest(
            [vector], limit=limit, through_sequence=through_sequence)
        return places

    async def _vectors(self, conversation_id: str, model: str) -> ConversationVectors:
        """The conversation's vectors: cached, or read (and kept)."""
        vectors = self.cache.get(conversation_id, model)
        if vectors is None:
            rows = await self.store.run("read a conversation's vectors", _rows, _CONVERSATION,
                                        {"cid": conversation_id, "model": model})
            vectors = ConversationVectors.read(rows)
            self.cache.keep(conversation_id, model, vectors)
        return vectors

    async def nearest_places_each(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[int, float]]]:
        return (await self._vectors(conversation_id, model)).nearest(vectors, limit=limit)

    async def turns_at(self, conversation_id: str, sequences: Collection[int]
                       ) -> dict[int, StoredMessage]:
        """Read as the store reads a few rows (on SQLite, on the loop's connection), as
        `nearest_turns` reads its own."""
        wanted = sorted(set(sequences))
        if not wanted:
            return {}
        turns: list[StoredMessage] = await self.store.run(
            "read the turns found", _turns_at, conversation_id, wanted,
            few=len(wanted) <= FEW_ROWS_READ)
        return {turn.sequence or 0: turn for turn in turns}

    async def nearest_turns(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[StoredMessage, float]]]:
        """Each vector's nearest places (`nearest_places`, scored together), their turns read
        in one statement for all of them (a turn deleted since is left out): a knowledge
        search asks with three texts, and reading each one's ids, then the turns not found by
        words, took a read per text and one more."""
        places = (await self._vectors(conversation_id, model)).nearest(vectors, limit=limit)
        wanted = sorted({sequence for found in places for sequence, _ in found})
        if not wanted:
            return [[] for _ in places]
        # One statement for a few rows (three texts' 30 places at most), read as the store
        # reads a few (on SQLite, on the loop's connection): in a reader thread it queued
        # behind the question's lexical searches, and ended after them.
        turns: list[StoredMessage] = await self.store.run(
            "read the turns found by meaning", _turns_at, conversation_id, wanted,
            few=len(wanted) <= FEW_ROWS_READ)
        at = {turn.sequence: turn for turn in turns}
        return [[(at[sequence], score) for sequence, score in found if sequence in at]
                for found in places]

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
    return [row_to_message(row[1:]) for row in rows]


def _rows(runner: SqlRunner, sql: str, params: dict[str, Any]) -> list[Sequence[Any]]:
    return runner.rows(sql, params)


def _turns_at(runner: SqlRunner, conversation_id: str, sequences: Sequence[int]
              ) -> list[StoredMessage]:
    params: dict[str, Any] = {"cid": conversation_id}
    rows = runner.rows(f"SELECT {SELECT_LIST_M} FROM threadline_messages m "
                       "WHERE m.conversation_id = :cid "
                       f"AND m.sequence IN ({_listed('s', sequences, params)})", params)
    return [row_to_message(row) for row in rows]


def _put(runner: SqlRunner, model: str, pairs: Sequence[tuple[str, bytes]]
         ) -> list[Sequence[Any]]:
    """(conversation, sequence, stored vector) of the vectors written (a turn gone or already
    done is not)."""
    vector = "CAST(:v{n} AS bytea)" if runner.dialect == "postgresql" else ":v{n}"
    params: dict[str, Any] = {"model": model}
    rows = []
    for n, (message_id, blob) in enumerate(pairs):
        params[f"i{n}"], params[f"v{n}"] = message_id, stored_form(blob)
        rows.append(f"(:i{n}, {vector.format(n=n)})")
    return runner.rows(_PUT.format(values="VALUES " + ", ".join(rows)), params)


def _unembedded(runner: SqlRunner, model: str, floor: int, limit: int
                ) -> tuple[list[Sequence[Any]], int | None]:
    """Up to `limit` turns without a vector in the next window of rows from `floor`, and the
    window's last row (None: no row from `floor` on)."""
    last = runner.rows(_WINDOW_END, {"floor": floor, "window": WINDOW})[0][0]
    if last is None:
        return [], None
    rows = runner.rows(_UNEMBEDDED, {"floor": floor, "last": int(last), "model": model,
                                     "limit": limit})
    return rows, int(last)


def _edited_turns(runner: SqlRunner, model: str, ids: Sequence[str]) -> list[Sequence[Any]]:
    params: dict[str, Any] = {"model": model}
    return runner.rows(_EDITED.format(ids=_listed("e", ids, params)), params)


def _progress(runner: SqlRunner, model: str) -> tuple[int, int]:
    done = runner.rows(_DONE, {"model": model})[0][0]
    wanted = runner.rows(_WANTED, {})[0][0]
    return int(done), int(wanted)


def _nearest_for_speakers(runner: SqlRunner, keys: Sequence[str], vector: bytes, model: str,
                          exclude_conversation: str, before_us: int, limit: int
                          ) -> list[tuple[StoredMessage, float]]:
    params: dict[str, Any] = {"cid": exclude_conversation, "before": before_us,
                              "newest": MAX_PERSON_TURNS, "model": model}
    rows = runner.rows(_PERSON.format(keys=_listed("k", keys, params)), params)
    ranked = best(stored_matrix([bytes(row[0]) for row in rows]), vector, limit=limit)
    turns = _messages([rows[index] for index, _ in ranked])
    return [(turn, score) for turn, (_, score) in zip(turns, ranked, strict=True)]
