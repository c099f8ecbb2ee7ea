"""A long conversation's words kept in process as numpy arrays, ranked by BM25 over every term.

A knowledge source of 100,000 sections is read far more often than it changes (only a sync
changes it), and the store's word search was most of its search: FTS5's bm25() looks up every
matched row's length (about 640 a text once the common words are pruned), a PostgreSQL
ranking statement costs 7 to 11 ms in the server. Kept here, the ranking takes every query
term, none pruned, in a fraction of a millisecond.

One term-major layout (CSR): `stems`, sorted, so that the stems a loose term matches by prefix
are one range of them and their postings one slice; `starts` (stem i's postings are
`starts[i]` to `starts[i + 1]`); each posting's section (`rows`, int32) and its BM25 score
(`weights`: idf times the term frequency saturated with the section's length normalised,
`threadline.history.search`'s `bm25_idf` and `bm25_saturated`). A query concatenates its
terms' slices and sums them by section (`np.bincount`), then takes the best (`top_rows`).

Words are the store's (`lower_words`, `stem`, a query's `stemmed_terms`). A section's title
(the turn's speaker name) counts half as much as its text, as the FTS5 index weighs that
column. Stop words get no postings (a query that reaches a search holds another word:
`worth_recalling`), but count in a section's length, as they do in the store's index.
Text written without spaces is the store's to match (its trigram index; `answers`). A quoted
phrase is ranked by its words, which are among the query's terms: no positions are kept, so
the store's credit for the words standing together is not given. Sending such a query to the
store instead made it the slowest search of a big source by far (p50 24 ms against 9 ms at
100,000 sections on SQLite; 2% of kb-dev's questions quote a phrase the agent said), and on
kb-dev, with the kept words forced on its 702 sections, ranking the phrases by their words
reached 90.4% of all questions against 90.5% (89.0% of first questions either way).
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from threadline.history.model import StoredMessage
from threadline.history.search import (
    ENGLISH_STOP_WORDS,
    SearchQuery,
    bm25_idf,
    bm25_saturated,
    lower_words,
    stem,
    stemmed_terms,
)
from threadline.history.similarity import top_rows

# How much a word of the title (the turn's speaker name) counts beside one of the text: the
# weight the FTS5 index gives that column (`threadline.backends.sql.sqlite`).
TITLE_WEIGHT = 0.5
# Every stem that starts with a prefix sorts before the prefix followed by this.
_LAST_CHARACTER = "\U0010ffff"
_ROW_BITS = 32


@dataclass(frozen=True, slots=True)
class WordIndex:
    """A conversation's words (see the module docstring); row i is the turn `sequences[i]`,
    in the order the turns were given (by sequence, as a conversation is read)."""

    stems: list[str]
    starts: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int32]
    weights: npt.NDArray[np.float32]
    sequences: npt.NDArray[np.int64]
    size: int

    @property
    def sections(self) -> int:
        return len(self.sequences)

    @staticmethod
    def answers(query: SearchQuery) -> bool:
        """Whether the kept words rank `query`: it has words (text written without spaces is
        matched by the store's trigram index; a quoted phrase is ranked by its words)."""
        return bool(query.terms) and not query.trigrams

    def best(self, query: SearchQuery, *, limit: int) -> list[int]:
        """The sequences of the `limit` turns best for `query`'s words, best first (BM25;
        ties in sequence order)."""
        slices = [self._postings(exact, prefix) for exact, prefix in stemmed_terms(query)]
        found = [(start, end) for start, end in slices if end > start]
        if not found or limit <= 0:
            return []
        rows = np.concatenate([self.rows[start:end] for start, end in found])
        weights = np.concatenate([self.weights[start:end] for start, end in found])
        # Summed in float64 (bincount's own; no copy).
        scores = np.bincount(rows, weights=weights, minlength=self.sections).astype(
            np.float64, copy=False)
        top = top_rows(scores, limit=limit)
        return [int(self.sequences[row]) for row in top if scores[row] > 0]

    def rows_at(self, sequences: Collection[int]) -> dict[int, int]:
        """The rows of the turns at these sequences that are kept here, by sequence."""
        wanted = np.fromiter(sequences, dtype=np.int64, count=len(sequences))
        rows = np.minimum(np.searchsorted(self.sequences, wanted), max(self.sections - 1, 0))
        held = self.sequences[rows] == wanted if self.sections else np.zeros(0, dtype=bool)
        return {int(sequence): int(row)
                for sequence, row in zip(wanted[held], rows[held], strict=True)}

    def _postings(self, exact: str, prefix: str | None) -> tuple[int, int]:
        """The postings of a term: of its stem, or of every stem starting with `prefix`."""
        if prefix is None:
            first = bisect_left(self.stems, exact)
            if first == len(self.stems) or self.stems[first] != exact:
                return 0, 0
            last = first + 1
        else:
            first = bisect_left(self.stems, prefix)
            last = bisect_left(self.stems, prefix + _LAST_CHARACTER, first)
        return int(self.starts[first]), int(self.starts[last])


class _StemIds(dict[str, int]):
    """A word's stem's id, the stem found (and given the next id) the first time the word is
    seen: a dict lookup a word, `stem` once a distinct word. A stop word's id is -1."""

    def __init__(self) -> None:
        super().__init__()
        self.stems: dict[str, int] = {}

    def __missing__(self, word: str) -> int:
        found = -1 if word in ENGLISH_STOP_WORDS else self.stems.setdefault(
            stem(word), len(self.stems))
        self[word] = found
        return found


class WordIndexBuilder:
    """A `WordIndex` made from a conversation's turns, given a part at a time (`add`), then
    finished (`index`). CPU-bound: run it off the event loop."""

    def __init__(self) -> None:
        self._ids = _StemIds()
        # Per part: the distinct (stem << 32 | row) keys of its postings, and their weighed
        # counts (a title word counting TITLE_WEIGHT).
        self._keys: list[npt.NDArray[np.int64]] = []
        self._counts: list[npt.NDArray[np.float32]] = []
        self._lengths: list[int] = []
        self._sequences: list[int] = []

    def add(self, turns: Iterable[StoredMessage]) -> None:
        """Count the words of these turns (each after every turn given before)."""
        first_row = len(self._sequences)
        ids: list[int] = []
        spans: list[int] = []  # per turn: its text's words, then its title's
        for turn in turns:
            text = lower_words(turn.content)
            title = lower_words(turn.participant.display_name)
            ids.extend(map(self._ids.__getitem__, text))
            ids.extend(map(self._ids.__getitem__, title))
            spans += (len(text), len(title))
            self._lengths.append(len(text) + len(title))
            self._sequences.append(turn.sequence or 0)
        turns_added = len(self._sequences) - first_row
        if not turns_added:
            return
        words = np.array(ids, dtype=np.int64)
        counted = np.array(spans, dtype=np.int64)
        rows = np.repeat(np.repeat(np.arange(first_row, len(self._sequences), dtype=np.int64),
                                   2), counted)
        weighed = np.repeat(np.tile(np.array([1.0, TITLE_WEIGHT], dtype=np.float32),
                                    turns_added), counted)
        kept = words >= 0
        keys, at = np.unique((words[kept] << _ROW_BITS) | rows[kept], return_inverse=True)
        self._keys.append(keys)
        self._counts.append(np.bincount(at, weights=weighed[kept]).astype(np.float32))

    @property
    def turns(self) -> int:
        return len(self._sequences)

    def index(self) -> WordIndex:
        """The index of every turn added."""
        stems = sorted(self._ids.stems)
        # A stem's id (given in order of appearance) to its place in `stems`.
        rank = np.empty(len(stems), dtype=np.int64)
        rank[np.array([self._ids.stems[s] for s in stems], dtype=np.int64)] = np.arange(
            len(stems), dtype=np.int64)
        keys = np.concatenate(self._keys) if self._keys else np.zeros(0, dtype=np.int64)
        counts = (np.concatenate(self._counts) if self._counts
                  else np.zeros(0, dtype=np.float32))
        term = rank[keys >> _ROW_BITS]
        order = np.argsort((term << _ROW_BITS) | (keys & ((1 << _ROW_BITS) - 1)),
                           kind="stable")
        term, rows, counts = term[order], (keys[order] & ((1 << _ROW_BITS) - 1)), counts[order]
        starts = np.searchsorted(term, np.arange(len(stems) + 1)).astype(np.int64)
        sections = len(self._sequences)
        matched = np.diff(starts)
        idf = np.array([bm25_idf(int(n), sections) for n in matched], dtype=np.float64)
        lengths = np.array(self._lengths, dtype=np.float64)
        ratio = lengths / max(float(lengths.mean()) if sections else 1.0, 1.0)
        weights = (np.repeat(idf, matched) * bm25_saturated(counts.astype(np.float64),
                                                            ratio[rows])).astype(np.float32)
        sequences = np.array(self._sequences, dtype=np.int64)
        rows32 = rows.astype(np.int32)
        size = (starts.nbytes + rows32.nbytes + weights.nbytes + sequences.nbytes
                + sum(sys.getsizeof(s) + 8 for s in stems))
        return WordIndex(stems, starts, rows32, weights, sequences, size)
