"""How many of a long conversation's turns hold each word, read once, for PostgreSQL's search.

A long conversation's search (a knowledge source's 100,000 sections) keeps its rarest words and
weighs them by their postings. Counted per word when asked (a GIN walk of up to LONG_COUNTED
rows, or ANALYZE's estimate for the most common) that cost p50 4.7 ms, mean 12 ms a word, about
four words a search, and one round trip more each to stem the word: most of a cold search's
time. A knowledge source changes only when synced, so its words are counted once, all together,
by `ts_stat` over the conversation's tsvectors (0.7 s at 100,000 sections), and kept in this
process for `MAX_AGE_SECONDS`; the first search after that reads them again, as a long
conversation's vectors are grouped once when read (`threadline.history.clusters`). Words'
stems (`to_tsquery`'s lexemes) are asked for in one statement per search, and remembered.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

from threadline.backends.sql.operations import LONG_COUNTED, SqlRunner

# How long a conversation's counts are kept (as long as its grouped vectors are).
MAX_AGE_SECONDS = 600.0
# Long conversations whose counts are kept at once (about 15,000 words each).
KEPT_CONVERSATIONS = 16
# Stems remembered, by word.
KEPT_STEMS = 20_000


@dataclass(frozen=True, slots=True)
class LexemeCounts:
    """A conversation's lexemes, sorted, with the turns holding each (capped at LONG_COUNTED)
    summed along them (`running[i]` is the turns of lexemes before the i-th), and the
    average of its turns' lengths in lexemes."""

    lexemes: tuple[str, ...]
    running: tuple[int, ...]
    average_length: int
    read_at: float

    def postings(self, lexeme: str, *, prefix: bool = False) -> int:
        """Turns holding `lexeme` (or, with `prefix`, a lexeme starting with it, summed: an
        upper bound), up to LONG_COUNTED."""
        first = bisect_left(self.lexemes, lexeme)
        if prefix:
            last = bisect_left(self.lexemes, lexeme + "\U0010ffff", first)
        else:
            last = first + 1 if self.lexemes[first:first + 1] == (lexeme,) else first
        return min(LONG_COUNTED, self.running[last] - self.running[first])


_kept: OrderedDict[str, LexemeCounts] = OrderedDict()
_stems: OrderedDict[str, str] = OrderedDict()


def lexeme_counts(conn: SqlRunner, conversation_id: str, turns: int) -> LexemeCounts:
    """The conversation's counts, read now when none are kept or they are too old."""
    kept = _kept.get(conversation_id)
    if kept is not None and time.monotonic() - kept.read_at <= MAX_AGE_SECONDS:
        _kept.move_to_end(conversation_id)
        return kept
    rows = sorted((str(word), int(turns_holding)) for word, turns_holding in conn.rows(
        "SELECT word, ndoc FROM ts_stat(format('SELECT search_vector FROM threadline_messages "
        "WHERE conversation_id = %L', CAST(:cid AS text)))", {"cid": conversation_id}))
    # The sum of every lexeme's turns is the sum of the turns' lengths (distinct lexemes).
    total = sum(n for _, n in rows)
    counts = LexemeCounts(tuple(word for word, _ in rows),
                          (0, *accumulate(min(n, LONG_COUNTED) for _, n in rows)),
                          max(1, round(total / max(turns, 1))), time.monotonic())
    _kept[conversation_id] = counts
    while len(_kept) > KEPT_CONVERSATIONS:
        _kept.popitem(last=False)
    return counts


def english_stems(conn: SqlRunner, words: Iterable[str]) -> dict[str, str]:
    """Each word's lexeme under the `english` configuration ("" for a stop word), asked for
    in one statement for the words not remembered."""
    wanted = list(dict.fromkeys(words))
    unknown = [w for w in wanted if w not in _stems]
    if unknown:
        rows = conn.rows(
            "SELECT u.word, CAST(to_tsquery('english', '''' || u.word || '''') AS text) "
            "FROM unnest(CAST(:words AS text[])) AS u(word)", {"words": unknown})
        for word, query in rows:
            _stems[str(word)] = str(query).split("'")[1] if str(query).count("'") == 2 else ""
        while len(_stems) > KEPT_STEMS:
            _stems.popitem(last=False)
    return {w: _stems.get(w, "") for w in wanted}
