"""How many of a long conversation's turns hold each word, read once, for PostgreSQL's search.

A long conversation's search (a knowledge source's 100,000 sections) keeps its rarest words and
weighs them by their postings. Counted per word when asked (a GIN walk of up to LONG_COUNTED
rows, or ANALYZE's estimate for the most common) that cost p50 4.7 ms, mean 12 ms a word, about
four words a search, and one round trip more each to stem the word: most of a cold search's
time. A knowledge source changes only when synced, so its words are counted once, all together,
by `ts_stat` over the conversation's tsvectors (0.7 to 3.6 s at 100,000 sections), and kept by
the store (`KeptLexemeCounts`) while the conversation is unchanged: each search reads the
conversation's row (its last sequence and its number of turns, one small statement, at most
once every CHECK_SECONDS) to know.

Counting again inside a turn stalled it for those seconds, which an expiry every 10 minutes
did. So counts are read in a search only when none are kept or the conversation changed by more
than STALE_SHARE of its turns since they were counted (a sync that rewrote a good part of the
source: the old counts would prune the wrong words). A smaller change is the bound on
staleness: the kept counts are served, and the conversation is marked due, so the store counts
it again off any turn's path (`due`, `refresh`), while searches go on with the kept ones.
Words' stems (`to_tsquery`'s lexemes) are asked for in one statement per search, and remembered.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

from threadline.backends.sql.operations import LONG_COUNTED, SqlRunner

# Share of a conversation's turns written or deleted since its counts were read up to which
# the kept counts are served (and refreshed in the background); beyond, a search reads them.
STALE_SHARE = 0.05
# Seconds during which searches take the kept counts without reading the conversation's row
# again (a turn's three searches read it once; each read is a round trip).
CHECK_SECONDS = 5.0
# Long conversations whose counts are kept at once (about 15,000 words each).
KEPT_CONVERSATIONS = 16
# Stems remembered, by word.
KEPT_STEMS = 20_000


@dataclass(frozen=True, slots=True)
class Written:
    """Where a conversation stood: its last sequence and its number of turns."""

    last_sequence: int
    turns: int

    def changed_since(self, earlier: Written) -> int:
        """Turns written or deleted between `earlier` and this (each appended turn takes a
        sequence; what the count did not gain of them was deleted)."""
        appended = max(0, self.last_sequence - earlier.last_sequence)
        return appended + max(0, earlier.turns + appended - self.turns)


@dataclass(frozen=True, slots=True)
class LexemeCounts:
    """A conversation's lexemes, sorted, with the turns holding each (capped at LONG_COUNTED)
    summed along them (`running[i]` is the turns of lexemes before the i-th), the average of
    its turns' lengths in lexemes, and where the conversation stood when they were counted."""

    lexemes: tuple[str, ...]
    running: tuple[int, ...]
    average_length: int
    written: Written

    def postings(self, lexeme: str, *, prefix: bool = False) -> int:
        """Turns holding `lexeme` (or, with `prefix`, a lexeme starting with it, summed: an
        upper bound), up to LONG_COUNTED."""
        first = bisect_left(self.lexemes, lexeme)
        if prefix:
            last = bisect_left(self.lexemes, lexeme + "\U0010ffff", first)
        else:
            last = first + 1 if self.lexemes[first:first + 1] == (lexeme,) else first
        return min(LONG_COUNTED, self.running[last] - self.running[first])


class KeptLexemeCounts:
    """One store's long conversations' counts (see the module docstring). Used from its
    event loop's thread only (PostgreSQL's runners run there, in greenlets)."""

    def __init__(self, *, conversations: int = KEPT_CONVERSATIONS,
                 stale_share: float = STALE_SHARE) -> None:
        self.conversations = conversations
        self.stale_share = stale_share
        self._kept: OrderedDict[str, LexemeCounts] = OrderedDict()
        self._checked: dict[str, float] = {}
        self._due: set[str] = set()

    def counts(self, conn: SqlRunner, conversation_id: str) -> LexemeCounts:
        """The conversation's counts: the kept ones unless it changed by more than
        `stale_share` since (marked due for a refresh when it changed at all), else read now.
        Where the conversation stands is read at most once every CHECK_SECONDS."""
        kept = self._kept.get(conversation_id)
        at = time.monotonic()
        if kept is not None and at - self._checked.get(conversation_id, -math.inf) < CHECK_SECONDS:
            self._kept.move_to_end(conversation_id)
            return kept
        self._checked[conversation_id] = at
        now = _written(conn, conversation_id)
        if kept is not None:
            changed = now.changed_since(kept.written)
            if changed <= self.stale_share * max(now.turns, 1):
                if changed:
                    self._due.add(conversation_id)
                self._kept.move_to_end(conversation_id)
                return kept
        return self.refresh(conn, conversation_id, written=now)

    def due(self) -> list[str]:
        """The conversations whose kept counts a refresh should replace, taken (each once)."""
        due, self._due = sorted(self._due), set()
        return due

    def refresh(self, conn: SqlRunner, conversation_id: str, *,
                written: Written | None = None) -> LexemeCounts:
        """Count the conversation's words now (`ts_stat`), and keep them."""
        # Where it stood is read first: a turn written during the count is then seen as a
        # change by the next search, never taken as counted.
        written = written or _written(conn, conversation_id)
        rows = sorted((str(word), int(turns_holding)) for word, turns_holding in conn.rows(
            "SELECT word, ndoc FROM ts_stat(format('SELECT search_vector FROM "
            "threadline_messages WHERE conversation_id = %L', CAST(:cid AS text)))",
            {"cid": conversation_id}))
        # The sum of every lexeme's turns is the sum of the turns' lengths (distinct lexemes).
        total = sum(n for _, n in rows)
        counts = LexemeCounts(tuple(word for word, _ in rows),
                              (0, *accumulate(min(n, LONG_COUNTED) for _, n in rows)),
                              max(1, round(total / max(written.turns, 1))), written)
        self._kept[conversation_id] = counts
        self._kept.move_to_end(conversation_id)
        while len(self._kept) > self.conversations:
            dropped, _ = self._kept.popitem(last=False)
            self._checked.pop(dropped, None)
        return counts


def _written(conn: SqlRunner, conversation_id: str) -> Written:
    rows = conn.rows("SELECT last_sequence, message_count FROM threadline_conversations "
                     "WHERE conversation_id = :cid", {"cid": conversation_id})
    return Written(int(rows[0][0]), int(rows[0][1])) if rows else Written(0, 0)


_stems: OrderedDict[str, str] = OrderedDict()


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
