"""Scoring stored turns' vectors against a question's, once for every backend that keeps them.

Vectors are float32, little-endian and L2-normalised (`threadline.history.vectors`), so one
matrix product gives every cosine similarity. numpy does it: a 1,000-turn conversation of
256-dimension vectors scores in about 0.1 ms, where a Python loop takes tens of milliseconds.
numpy comes with the `threadline[embeddings]` extra; a backend imports this module only when
numpy is installed (`threadline.history.vectors.vectors_supported`), so without it nothing
here is imported and `Backend.vectors` stays None.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from threadline.history.model import StoredMessage

log = structlog.get_logger("threadline.history.similarity")

Matrix = npt.NDArray[np.float32]

# Variables by which an operator sets BLAS's threads; when one is set, it is left as set.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """Keep the process's BLAS to one thread, unless the operator set its threads.

    Every product here is small (a question against a conversation's thousand vectors, a
    knowledge source's probed groups: a millisecond or less each), and they are made from the
    event loop, the store's threads and the embedder's at once. OpenBLAS wakes threads of its
    own for each one, which only contend with those for the cores: on this 2-core machine a
    knowledge search at 100,000 sections (`bench/knowledge.py --scale-only`'s questions, on
    the same stored sections) took p50 24 ms with them and 15 ms without. threadpoolctl comes
    with the embeddings extra.
    """
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # installed before the extra had it: slower searches, nothing broken
        log.warning("embeddings.blas_threads_unset", consequence="BLAS keeps its own threads",
                    fix="pip install 'threadline[embeddings]' again, or set "
                        "OPENBLAS_NUM_THREADS=1")
        return
    threadpool_limits(limits=1, user_api="blas")


def embeddable(message: StoredMessage) -> bool:
    """Whether a turn gets a vector: what lexical search indexes (text, not a summary).

    The SQL backends say the same in SQL (`threadline.backends.sql.vectors`).
    """
    return bool(message.content) and not message.metadata.is_summary


def as_matrix(vectors: Sequence[bytes]) -> Matrix:
    """Stored vectors as the rows of one matrix (all of one model, so of one size)."""
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(vectors), -1)


def best(matrix: Matrix, question: bytes, *, limit: int) -> list[tuple[int, float]]:
    """(row, cosine similarity) of the `limit` rows closest to `question`, best first.

    A matrix whose vectors have another size than the question's (a model changed under the
    same name) matches nothing rather than raising mid-search.
    """
    query = np.frombuffer(question, dtype="<f4")
    if limit <= 0 or matrix.shape[0] == 0 or matrix.shape[1] != query.shape[0]:
        return []
    scores = matrix @ query
    return [(int(row), float(scores[row])) for row in top_rows(scores, limit=limit)]


def top_rows(scores: npt.NDArray[np.floating[Any]], *, limit: int) -> npt.NDArray[np.intp]:
    """The places of the `limit` highest scores, highest first (ties in place order).

    The `limit`-th highest score is found by partitioning the places (`argpartition`: fast
    also where most scores are equal, as a big source's BM25 scores are zero for the sections
    a query's words miss; partitioning the values themselves took 1.7-2.5 ms there against
    0.15-0.4 ms, 100,000 scores); the places above it are sorted, and the places tied with it
    taken in place order until `limit`."""
    rows = scores.shape[0]
    if limit >= rows:
        return np.argsort(-scores, kind="stable")
    if limit <= 0:
        return np.zeros(0, dtype=np.intp)
    negated = -scores
    cut = negated[np.argpartition(negated, limit - 1)[limit - 1]]
    above = np.flatnonzero(negated < cut)
    tied = np.flatnonzero(negated == cut)[:limit - above.shape[0]]
    return np.concatenate([above[np.lexsort((above, negated[above]))], tied])


def checked(vector: bytes, *, message_id: str, model: str) -> bytes:
    """A vector as given, once it is a whole number of float32 values; else a clear error."""
    if not vector or len(vector) % 4:
        raise ValueError(f"the vector of turn {message_id} by model {model!r} is "
                         f"{len(vector)} bytes, not float32 values; the embedder must return "
                         "float32 little-endian bytes (threadline.history.vectors)")
    return vector
