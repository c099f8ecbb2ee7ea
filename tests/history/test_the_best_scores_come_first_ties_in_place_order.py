"""`top_rows`, which every kept ranking (a big source's words, its grouped vectors, a
conversation's vectors) takes its best from, returns exactly what sorting every score would:
the highest first, tied scores in place order, also where a tie straddles the cut."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.history.similarity import top_rows

# Few distinct values, so most scores are tied (as BM25 scores of sections of one page are).
scores_strategy = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5]), min_size=1,
                           max_size=300)


@settings(max_examples=300, deadline=None)
@given(scores=scores_strategy, limit=st.integers(1, 320))
def test_top_rows_is_the_sorted_order_cut(scores: list[float], limit: int) -> None:
    expected = sorted(range(len(scores)), key=lambda place: (-scores[place], place))[:limit]
    for dtype in (np.float32, np.float64):
        assert top_rows(np.array(scores, dtype=dtype), limit=limit).tolist() == expected


def test_a_tie_at_the_cut_keeps_the_first_places() -> None:
    scores = np.zeros(100_000)
    scores[[5, 70_000, 99_999]] = 3.0
    assert top_rows(scores, limit=10).tolist() == [5, 70_000, 99_999, 0, 1, 2, 3, 4, 6, 7]
