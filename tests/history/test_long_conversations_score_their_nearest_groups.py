"""A conversation of many vectors (a knowledge source's sections) is grouped when read, and a
question scores its nearest groups: a stored turn's own vector still finds that turn first."""

from __future__ import annotations

import numpy as np

from threadline.backends.sql.conversation_vectors import ConversationVectors
from threadline.history.clusters import CLUSTERED_ROWS


def normalised(rows: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_a_long_conversation_is_grouped_and_finds_each_turn_by_its_own_vector() -> None:
    matrix = normalised(CLUSTERED_ROWS + 500, seed=1)
    rows = [(10 + n, vector.astype("<f2").tobytes()) for n, vector in enumerate(matrix)]
    vectors = ConversationVectors.read(rows)
    assert vectors.clusters is not None
    for row in (0, 7, 4_321, CLUSTERED_ROWS + 499):
        question = vectors.matrix[np.flatnonzero(vectors.sequences == 10 + row)[0]].tobytes()
        [[(sequence, score)]] = vectors.nearest([question], limit=1)
        assert sequence == 10 + row and score > 0.99
        # Leaving the later turns out scores exactly, among those left.
        [earlier] = vectors.nearest([question], limit=1, through_sequence=9 + row)
        assert len(earlier) == min(row, 1) and all(s < 10 + row for s, _ in earlier)


def test_questions_scored_together_find_what_each_finds_alone() -> None:
    # Their nearest groups are read once for all of them; each keeps its own groups' scores.
    matrix = normalised(CLUSTERED_ROWS + 500, seed=3)
    vectors = ConversationVectors.read([(n, v.astype("<f2").tobytes())
                                        for n, v in enumerate(matrix)])
    questions = [normalised(1, seed=10 + n)[0].tobytes() for n in range(3)]
    together = vectors.nearest(questions, limit=30)
    alone = [vectors.nearest([question], limit=30)[0] for question in questions]
    assert [[s for s, _ in found] for found in together] == [[s for s, _ in found]
                                                              for found in alone]
    assert len({tuple(found) for found in together}) == 3  # three different answers
    assert np.allclose([score for found in together for _, score in found],
                       [score for found in alone for _, score in found], atol=1e-5)


def test_a_short_conversation_is_not_grouped() -> None:
    matrix = normalised(500, seed=2)
    vectors = ConversationVectors.read([(n, v.astype("<f2").tobytes())
                                        for n, v in enumerate(matrix)])
    assert vectors.clusters is None
    [[(sequence, _)]] = vectors.nearest([matrix[42].tobytes()], limit=1)
    assert sequence == 42
