"""Scoring a very long conversation's vectors by the groups nearest the question, not all of them.

A knowledge source of 100,000 sections is one conversation of 100,000 vectors: 100 MB at 256
dimensions, which one matrix product reads whole for every question (about 25 ms here, more
than the whole search may take). So a conversation of at least CLUSTERED_ROWS vectors is
grouped once, when it is read into memory: spherical k-means on a sample (about the square root
of its size in groups), every row then given to its nearest centroid, the rows stored group by
group. A question scores the centroids, then only the rows of the nearest groups, enough of them
to cover PROBED_SHARE of the rows (an inverted-file index, as FAISS's IVF is). It is
approximate: a row nearest the question can sit in a group whose centroid is not; the fused
ranking around it (BM25 beside it) forgives a missed neighbour more than a slow search. Below
CLUSTERED_ROWS nothing is grouped and scoring stays exact, so recall over everyday
conversations is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from threadline.history.similarity import Matrix, top_rows

# Vectors from which a conversation is grouped (fewer score exactly in about 5 ms or less).
CLUSTERED_ROWS = 20_000
# Share of the rows a question scores (its nearest groups'), and at least this many rows.
PROBED_SHARE = 0.1
MIN_PROBED = 2_000
# k-means on a sample of this many rows, this many rounds (grouping 100,000 rows: about 1 s).
SAMPLE = 16_384
ROUNDS = 8
# Rows scored by one matrix product while rows are given their group (bounds the memory).
CHUNK = 8_192


@dataclass(frozen=True, slots=True)
class Clusters:
    """Groups of a matrix whose rows are stored group by group: group g is the rows
    `starts[g]` to `starts[g + 1]`, its centroid row g of `centroids`."""

    centroids: Matrix
    starts: npt.NDArray[np.int64]

    @staticmethod
    def grouping(matrix: Matrix, *, seed: int = 41) -> tuple[npt.NDArray[np.int64], Clusters]:
        """(order, clusters): `matrix[order]` is the matrix stored group by group."""
        rows = matrix.shape[0]
        rng = np.random.default_rng(seed)
        sample = matrix[np.sort(rng.choice(rows, size=min(rows, SAMPLE), replace=False))]
        count = max(1, math.isqrt(rows))
        centroids = sample[rng.choice(len(sample), size=count, replace=False)].copy()
        for _ in range(ROUNDS):
            centroids = _moved(centroids, sample, np.argmax(sample @ centroids.T, axis=1))
        groups = np.concatenate([np.argmax(matrix[at:at + CHUNK] @ centroids.T, axis=1)
                                 for at in range(0, rows, CHUNK)])
        order = np.argsort(groups, kind="stable")
        starts = np.searchsorted(groups[order], np.arange(count + 1)).astype(np.int64)
        return order.astype(np.int64), Clusters(centroids, starts)

    def best(self, matrix: Matrix, questions: Sequence[bytes], *, limit: int
             ) -> list[list[tuple[int, float]]]:
        """For each question, (row, cosine similarity) of the best `limit` rows among its
        nearest groups', best first; `matrix` is the one grouped (stored group by group).

        Scoring is bound by reading the rows (a tenth of 100,000 vectors is 10 MB a
        question), and a knowledge search asks with three texts whose nearest groups are
        mostly the same: each group any of them probes is read once, scored for all of them,
        and each question keeps the scores of its own groups."""
        queries = [np.frombuffer(question, dtype="<f4") for question in questions]
        if (limit <= 0 or matrix.shape[0] == 0
                or any(matrix.shape[1] != query.shape[0] for query in queries)):
            return [[] for _ in questions]
        probed = [self._probed(matrix, query, limit=limit) for query in queries]
        stacked = np.stack(queries, axis=1)
        scored = {int(g): matrix[self.starts[g]:self.starts[g + 1]] @ stacked
                  for g in np.unique(np.concatenate(probed))}
        found = []
        for column, groups in enumerate(probed):
            rows = np.concatenate([np.arange(self.starts[g], self.starts[g + 1])
                                   for g in groups])
            scores = np.concatenate([scored[int(g)][:, column] for g in groups])
            found.append([(int(rows[i]), float(scores[i]))
                          for i in top_rows(scores, limit=limit)])
        return found

    def _probed(self, matrix: Matrix, query: npt.NDArray[np.float32], *, limit: int
                ) -> npt.NDArray[np.int64]:
        """The groups nearest `query` holding PROBED_SHARE of the rows, in the groups' order."""
        nearest = np.argsort(-(self.centroids @ query), kind="stable")
        sizes = (self.starts[1:] - self.starts[:-1])[nearest]
        wanted = max(limit, MIN_PROBED, int(PROBED_SHARE * matrix.shape[0]))
        return np.sort(nearest[:int(np.searchsorted(np.cumsum(sizes), wanted)) + 1])


def _moved(centroids: Matrix, sample: Matrix, groups: npt.NDArray[np.intp]) -> Matrix:
    """Each centroid moved to its group's normalised mean (an empty group's stays)."""
    order = np.argsort(groups, kind="stable")
    present, firsts = np.unique(groups[order], return_index=True)
    moved = centroids.copy()
    sums = np.add.reduceat(sample[order], firsts, axis=0)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    moved[present] = sums / np.where(norms > 0, norms, 1.0)
    return moved.astype(np.float32)
