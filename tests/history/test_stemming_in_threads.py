"""Words are stemmed the same in every thread at once: the SQLite store stems in its own
threads beside the event loop, and a Snowball stemmer keeps the word it works on in itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import snowballstemmer

from threadline.history.search import stem

SUFFIXES = ("ing", "ations", "fulness", "ously", "ively", "ements", "ed", "s")


def words_of(thread: int) -> list[str]:
    # Distinct words per thread, so each is stemmed (not answered from the cache).
    return [f"{'ab' * (1 + n % 7)}x{thread}y{n}{SUFFIXES[n % len(SUFFIXES)]}"
            for n in range(6_000)]


def test_eight_threads_stem_as_one_does() -> None:
    reference = snowballstemmer.stemmer("english")
    with ThreadPoolExecutor(max_workers=8) as pool:
        stemmed = list(pool.map(lambda t: [stem(w) for w in words_of(t)], range(8)))
    for thread, stems in enumerate(stemmed):
        assert stems == [reference.stemWord(w) for w in words_of(thread)]
