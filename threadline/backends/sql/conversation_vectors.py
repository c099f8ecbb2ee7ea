"""Conversations' vectors kept in this process, so a search by meaning reads none from disk.

Reading a conversation's thousand 1 KB vectors out of the database took 3 to 15 ms here (on a
loaded machine), scoring them 0.1 ms: the read is the cost. A bot asks about the same few
active conversations again and again, so the last ones read are kept as numpy arrays, least
recently used dropped first beyond `max_bytes`.

Vectors are stored as float16 (`stored_form`): half the bytes to read, and a row small enough
(about 530 bytes at 256 dimensions) that SQLite keeps a conversation's rows together in its
primary key's pages instead of spilling each to an overflow page. Cosine similarities move by
about 0.001, below what separates two turns' ranks in practice; what crosses the backend's
boundary stays float32 (`threadline.history.vectors`).

Vectors this process stores join the cached conversation they belong to (`extend`): the
background indexer stores a new turn's vector moments after it is said, and dropping the
conversation then would make the next turn's recall read all of it again. A cached
conversation is dropped when the history says a turn of it was edited or deleted (on
PostgreSQL, by any process), and after `max_age` seconds whatever happens: vectors another
process stored meanwhile are missing until then, and those turns are found by their words.
A cached vector never brings back a deleted turn: the search looks every hit up among the
stored turns before returning it.

A conversation of CLUSTERED_ROWS vectors or more (a knowledge source's sections) is grouped
when read (`threadline.history.clusters`), so a question scores a tenth of it, and is kept up
to GROUPED_MAX_AGE_SECONDS; once this process stores vectors into it (a sync), it is scored
whole, exactly, until it is read and grouped again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from threadline.history.changes import HistoryChange
from threadline.history.clusters import CLUSTERED_ROWS, Clusters
from threadline.history.similarity import Matrix, best

# Bytes of vectors kept in process at most (about 256 conversations of 1,000 turns, or one
# knowledge source of 100,000 sections at 256 dimensions beside 150 such conversations: read
# again, that source costs half a second and more).
MAX_BYTES = 256 * 1024 * 1024
MAX_AGE_SECONDS = 60.0
# A grouped conversation's (`threadline.history.clusters`) age: reading and grouping it again
# takes about a second, and what it misses meanwhile is still found by its words.
GROUPED_MAX_AGE_SECONDS = 600.0


STORED_TYPE = "<f2"


def stored_form(vector: bytes) -> bytes:
    """A float32 vector as the SQL backends keep it (float16, little-endian)."""
    return np.frombuffer(vector, dtype="<f4").astype(STORED_TYPE).tobytes()


def stored_matrix(blobs: Sequence[bytes]) -> Matrix:
    """Kept vectors (all of one model, so of one size) as the float32 rows of one matrix."""
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=STORED_TYPE)
    return joined.reshape(len(blobs), -1).astype(np.float32)


@dataclass(frozen=True, slots=True)
class ConversationVectors:
    """One conversation's vectors by one model: row i is the turn of `sequences[i]`."""

    sequences: npt.NDArray[np.int64]
    matrix: Matrix
    read_at: float
    # A long conversation's groups (`threadline.history.clusters`), its rows stored by group.
    clusters: Clusters | None = None

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> ConversationVectors:
        """From (sequence, vector) rows."""
        return cls(np.array([int(row[0]) for row in rows], dtype=np.int64),
                   stored_matrix([bytes(row[1]) for row in rows]), time.monotonic())

    @classmethod
    def read(cls, rows: Sequence[Sequence[Any]]) -> ConversationVectors:
        """From the (sequence, vector) rows of a whole conversation, grouped when it has
        CLUSTERED_ROWS of them or more."""
        vectors = cls.of(rows)
        if len(vectors.sequences) < CLUSTERED_ROWS:
            return vectors
        order, clusters = Clusters.grouping(vectors.matrix)
        return cls(vectors.sequences[order], vectors.matrix[order], vectors.read_at, clusters)

    @property
    def size(self) -> int:
        grouped = self.clusters.centroids.nbytes if self.clusters is not None else 0
        return int(self.matrix.nbytes + self.sequences.nbytes + grouped)

    def nearest(self, questions: Sequence[bytes], *, limit: int,
                through_sequence: int | None = None) -> list[list[tuple[int, float]]]:
        """For each question, (sequence, cosine similarity) of the `limit` vectors nearest
        it, best first: among its nearest groups' when grouped (`Clusters.best`, the
        questions scored together), else (or when the turns after `through_sequence` are
        left out) all of them."""
        sequences, matrix = self.sequences, self.matrix
        if self.clusters is not None and through_sequence is None:
            ranked = self.clusters.best(matrix, questions, limit=limit)
        else:
            if through_sequence is not None and len(sequences):
                within = sequences <= through_sequence
                sequences, matrix = sequences[within], matrix[within]
            ranked = [best(matrix, question, limit=limit) for question in questions]
        return [[(int(sequences[row]), score) for row, score in found] for found in ranked]

    def with_rows(self, rows: Sequence[Sequence[Any]]) -> ConversationVectors:
        """These vectors with (sequence, stored vector) rows added; a row for a sequence
        already here replaces it. The age stays the first read's."""
        added = ConversationVectors.of(rows)
        if not len(added.sequences):
            return self
        if not len(self.sequences) or self.matrix.shape[1] != added.matrix.shape[1]:
            # Nothing kept yet, or vectors of another size (the model changed under this name).
            return replace(added, read_at=self.read_at)
        kept = ~np.isin(self.sequences, added.sequences)
        return ConversationVectors(np.concatenate([self.sequences[kept], added.sequences]),
                                   np.concatenate([self.matrix[kept], added.matrix]),
                                   self.read_at)


class VectorCache:
    """The recently searched conversations' vectors (see the module docstring)."""

    def __init__(self, *, max_bytes: int = MAX_BYTES, max_age: float = MAX_AGE_SECONDS) -> None:
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._kept: OrderedDict[tuple[str, str], ConversationVectors] = OrderedDict()
        self._bytes = 0

    def get(self, conversation_id: str, model: str) -> ConversationVectors | None:
        key = (conversation_id, model)
        found = self._kept.get(key)
        if found is None:
            return None
        max_age = self.max_age if found.clusters is None else max(self.max_age,
                                                                   GROUPED_MAX_AGE_SECONDS)
        if time.monotonic() - found.read_at > max_age:
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return found

    def keep(self, conversation_id: str, model: str, vectors: ConversationVectors) -> None:
        key = (conversation_id, model)
        self._drop(key)
        if vectors.size > self.max_bytes:
            return
        self._kept[key] = vectors
        self._bytes += vectors.size
        while self._bytes > self.max_bytes:
            self._drop(next(iter(self._kept)))

    def extend(self, conversation_id: str, model: str, rows: Sequence[Sequence[Any]]) -> None:
        """(sequence, stored vector) rows this process just stored in a conversation, added
        to its cached vectors (when it is cached: an uncached one is read whole when next
        searched)."""
        found = self._kept.get((conversation_id, model))
        if found is not None:
            self.keep(conversation_id, model, found.with_rows(rows))

    def forget(self, conversation_ids: Iterable[str]) -> None:
        """Drop these conversations' vectors, by every model."""
        doomed = set(conversation_ids)
        for key in [key for key in self._kept if key[0] in doomed]:
            self._drop(key)

    def heard(self, change: HistoryChange) -> None:
        """A history change: an edit or a deletion makes the conversation's vectors stale (a
        new turn has no vector yet, so an append changes nothing here)."""
        if change.kind in ("edit", "delete"):
            self.forget([change.conversation_id])

    def _drop(self, key: tuple[str, str]) -> None:
        gone = self._kept.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size
