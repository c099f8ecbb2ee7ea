"""Search shared by every store: questions into safe queries, ranked hits into context windows.

People and models ask questions, not keywords. A query is tokenized, stop words are dropped,
the remaining terms are OR-ed (each quoted, so no user or model text ever acts as FTS5 or
tsquery syntax) and ranked by BM25, so a turn holding most of the words comes first while one
holding some is still found. Quoted phrases count extra. Text without spaces (Chinese, Japanese,
Korean) is matched by character trigrams instead of words.

Each store compiles a `SearchQuery` into its own dialect; the window merging, token capping and
the text a model reads live here, once.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

import snowballstemmer

from threadline.errors import ConfigError, SearchQueryError
from threadline.history.model import StoredMessage
from threadline.history.projection import SpeakerLabels, speaker_label, turn_text
from threadline.history.store import SearchWindow

MAX_QUERY_CHARS = 4000
# Turns a search ranks at most before its most common words are dropped (see prune_common).
MAX_RANKED = 300
# Postings of the whole index that a search's words may have together (see prune_common).
MAX_POSTINGS = 40_000
MAX_TERMS = 24
# Stems longer than this match by their prefix (see stem_prefix).
PREFIX_MIN = 5
# A turn from a month the question names ("in July 2023") scores this many times higher.
MONTH_BOOST = 1.5
MAX_TRIGRAMS = 40
# BM25's term-frequency saturation and length normalisation (FTS5's and Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75

ENGLISH_STOP_WORDS: frozenset[str] = frozenset({
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "couldn", "d", "did", "didn", "do", "does", "doesn", "doing",
    "don", "down", "during", "each", "few", "for", "from", "further", "had", "hadn", "has",
    "hasn", "have", "haven", "having", "he", "her", "here", "hers", "herself", "him", "himself",
    "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "ll", "m",
    "ma", "me", "mightn", "more", "most", "mustn", "my", "myself", "needn", "no", "nor", "not",
    "now", "o", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves",
    "out", "over", "own", "re", "s", "same", "shan", "she", "should", "shouldn", "so", "some",
    "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "ve",
    "very", "was", "wasn", "we", "were", "weren", "what", "when", "where", "which", "while",
    "who", "whom", "why", "will", "with", "won", "wouldn", "y", "you", "your", "yours",
    "yourself", "yourselves", "tell", "told", "say", "said", "know", "remember", "anyone",
    "someone", "something", "get", "got", "ever",
})

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# ASCII text's separators (what `_WORD` does not match there) as spaces: translated and split,
# a 770-character section's words took 11 us against 36 us by `findall`.
_ASCII_SEPARATORS = str.maketrans({c: " " for c in range(128) if not chr(c).isalnum()})
_PHRASE = re.compile(r'"([^"]+)"')
_MONTHS = {name: n for n, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_MONTH = re.compile(
    r"(?P<before>\b(?:in|of|early|late|mid|since|until|during)\s+)?\b(?P<name>"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b\.?,?(?:\s+(?P<year>(?:19|20)\d\d)\b)?")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A question reduced to safe search terms.

    `terms` are lower-cased words (stop words gone), `phrases` the quoted phrases as word
    tuples, `trigrams` three-character pieces of text written without spaces, `months` the
    (year or None, month) a question names ("in July 2023"): turns from then rank higher.
    `loose` are the terms that match any word sharing a long stem's prefix ("counseling" finds
    "counselor", "allergy" finds "allergic"): words written in lower case, not names.
    """

    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]
    trigrams: tuple[str, ...]
    months: tuple[tuple[int | None, int], ...] = ()
    loose: frozenset[str] = frozenset()

    @property
    def is_empty(self) -> bool:
        return not (self.terms or self.phrases or self.trigrams)

    @classmethod
    def parse(cls, text: str, *, stop_words: frozenset[str] = ENGLISH_STOP_WORDS) -> SearchQuery:
        if not isinstance(text, str):
            raise SearchQueryError(f"a search query must be text, got {type(text).__name__}")
        if len(text) > MAX_QUERY_CHARS:
            raise SearchQueryError(
                f"the search query is {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}. "
                "Ask with a few key words or one question."
            )
        text = text.replace("\x00", " ")
        quoted = (tuple(w.lower() for w in _WORD.findall(p)) for p in _PHRASE.findall(text))
        phrases = tuple(phrase for phrase in quoted if len(phrase) > 1)
        trigrams = [run[i : i + 3] for run in _CJK.findall(text)
                    for i in range(max(len(run) - 2, 0))]
        spaced = _CJK.sub(" ", text)
        all_words = [w.lower() for w in _WORD.findall(spaced)]
        kept = [w for w in all_words if w not in stop_words] or all_words
        terms = tuple(dict.fromkeys(kept))[:MAX_TERMS]
        lower = {w for w in _WORD.findall(spaced) if w.islower()}
        return cls(terms=terms, phrases=phrases[:4],
                   trigrams=tuple(dict.fromkeys(trigrams))[:MAX_TRIGRAMS],
                   months=months_named(text), loose=frozenset(t for t in terms if t in lower))


def months_named(text: str) -> tuple[tuple[int | None, int], ...]:
    """The (year or None, month) pairs a text names: "July 2023", "in August", "Sept. 2022".

    Capitalized month names only, and "May" only with a year or after "in" (it is also a verb).
    """
    found: dict[tuple[int | None, int], None] = {}
    for match in _MONTH.finditer(text):
        name, year = match.group("name"), match.group("year")
        if name == "May" and not year and not match.group("before"):
            continue
        found[(int(year) if year else None, _MONTHS[name[:3].lower()])] = None
    return tuple(found)[:4]


def in_month(moment: datetime, months: Iterable[tuple[int | None, int]]) -> bool:
    moment = moment.astimezone(UTC)
    return any(moment.month == month and year in (None, moment.year) for year, month in months)


@dataclass(frozen=True, slots=True)
class SearchScope:
    """Turns a search leaves out: those a prompt already holds, and those after a sequence."""

    exclude_ids: frozenset[str] = frozenset()
    through_sequence: int | None = None

    def allows(self, message: StoredMessage) -> bool:
        return self.allows_turn(message.id, message.sequence or 0)

    def allows_turn(self, message_id: str, sequence: int) -> bool:
        return message_id not in self.exclude_ids and (
            self.through_sequence is None or sequence <= self.through_sequence)


def prune_common(query: SearchQuery, matches: Callable[[str], int], *,
                 max_matches: int = MAX_RANKED) -> SearchQuery:
    """The query without its most common words, keeping their summed `matches` near a limit.

    Common words are where a full-text search spends its time and add little to a BM25
    ranking, which weighs them least anyway: FTS5's bm25() walks every posting of every query
    word once to weigh it (about 3 ms for a word in 77,000 of a million turns), and ranking
    costs about 10 µs a matched turn. `matches` counts the turns holding a word, in the whole
    index or in the conversation. Words are kept rarest first while their counts fit; the
    rarest is always kept. Phrases stay when their rarest word fits.
    """
    counts = {term: matches(term) for term in query.terms}
    kept: list[str] = []
    walked = 0
    for term in sorted(query.terms, key=lambda t: (counts[t], t)):
        if kept and walked + counts[term] > max_matches:
            break
        kept.append(term)
        walked += counts[term]
    phrases = tuple(p for p in query.phrases
                    if min(counts.get(w) or matches(w) for w in p) <= max_matches)
    return replace(query, terms=tuple(t for t in query.terms if t in kept), phrases=phrases)


def single_word(word: str) -> SearchQuery:
    return SearchQuery(terms=(word,), phrases=(), trigrams=())


def stem_prefix(stemmed: str) -> str | None:
    """The prefix a long stem matches by (None for short stems, which match exactly).

    Stemmers leave near-forms apart ("counsel" / "counselor", "allergi" / "allerg"); dropping
    the last two letters of a stem of six or more joins them at little cost in precision.
    """
    if len(stemmed) <= PREFIX_MIN:
        return None
    return stemmed[:max(PREFIX_MIN, len(stemmed) - 2)]


def loose_prefix(term: str, query: SearchQuery, stemmer: Callable[[str], str]) -> str | None:
    """The stem prefix a term of `query` matches by under `stemmer`, or None to match exactly."""
    return stem_prefix(stemmer(term)) if term in query.loose else None


def conversation_key(conversation_id: str) -> str:
    """A single-token stand-in for a conversation id inside a full-text index.

    Ids such as `slack:T1:C2` would be split into several tokens, and a phrase match on them
    would also match the thread `slack:T1:C2:1700.1`; a hex digest is one exact token.
    """
    return "c" + hashlib.blake2b(conversation_id.encode(), digest_size=12).hexdigest()


_per_thread = threading.local()


def _stemmer() -> snowballstemmer.stemmer:
    """This thread's stemmer: a Snowball stemmer keeps the word it is working on in itself, and
    the SQLite store stems in its own threads beside the event loop (one shared stemmer gave
    IndexErrors under load)."""
    stemmer: snowballstemmer.stemmer | None = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        stemmer = _per_thread.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """One lower-cased word's English stem; words repeat, and Snowball in Python is slow."""
    return str(_stemmer().stemWord(word))


def lower_words(text: str) -> list[str]:
    """A text's words (`_WORD`), lower-cased; an index kept in process reads every word of
    100,000 sections with it, so the text is lowered whole, and ASCII text is split."""
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    return _WORD.findall(text.lower())


def stem_words(text: str) -> list[str]:
    """Lower-cased, stemmed words of a text, as the in-memory store indexes them."""
    return [stem(w) for w in lower_words(text)]


def stemmed_terms(query: SearchQuery) -> list[tuple[str, str | None]]:
    """Each term of `query` as (its stem, the stem prefix it matches by, or None to match the
    stem exactly), as the indexes kept in this process match them."""
    return [(stem(t), loose_prefix(t, query, stem)) for t in query.terms]


def bm25_idf(matched: int, documents: int) -> float:
    """BM25's weight of a word in `matched` of `documents` (never negative: a word in most
    documents weighs little, not less than nothing)."""
    return math.log(1 + (documents - matched + 0.5) / (matched + 0.5))


def bm25_saturated(tf: Any, length_ratio: Any) -> Any:
    """BM25's share of a word seen `tf` times in a document `length_ratio` times the average
    length (times its idf, the word's score in that document): floats, or numpy arrays of
    them (the index kept in process weighs all its postings at once)."""
    return tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length_ratio))


@dataclass(frozen=True, slots=True)
class IndexedTurn:
    """A turn with its stemmed words counted once, for `bm25_rank` (stemming is the cost)."""

    message: StoredMessage
    counts: Counter[str]
    length: int
    joined: str

    @classmethod
    def of(cls, message: StoredMessage) -> IndexedTurn:
        words = stem_words(message.content) + stem_words(message.participant.display_name)
        return cls(message, Counter(words), len(words) or 1, " ".join(words))


def bm25_rank(
    query: SearchQuery, documents: Sequence[IndexedTurn], *, limit: int
) -> list[StoredMessage]:
    """BM25 over indexed turns, for stores without a full-text index of their own."""
    terms = stemmed_terms(query)
    phrases = [" ".join(stem(w) for w in p) for p in query.phrases]
    if not documents or (not terms and not phrases and not query.trigrams):
        return []
    average_length = sum(d.length for d in documents) / len(documents)

    def count(doc: IndexedTurn, term: tuple[str, str | None]) -> int:
        exact, prefix = term
        if prefix is None:
            return doc.counts.get(exact, 0)
        return sum(n for word, n in doc.counts.items() if word.startswith(prefix))

    frequency = {t: sum(1 for d in documents if count(d, t)) for t in terms}
    scored: list[tuple[float, int, StoredMessage]] = []
    for position, doc in enumerate(documents):
        score = 0.0
        for term in terms:
            tf = count(doc, term)
            if tf:
                score += (bm25_idf(frequency[term], len(documents))
                          * bm25_saturated(tf, doc.length / average_length))
        score += sum(2.0 for p in phrases if p in doc.joined)
        score += sum(1.0 for t in query.trigrams if t in doc.message.content)
        if query.months and in_month(doc.message.timestamp, query.months):
            score *= MONTH_BOOST
        if score > 0:
            scored.append((score, position, doc.message))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [message for _, _, message in scored[:limit]]


def cap_by_tokens(messages: Iterable[StoredMessage], token_cap: int) -> list[StoredMessage]:
    """The leading messages whose stored token counts fit the cap (the first always does)."""
    kept: list[StoredMessage] = []
    used = 0
    for message in messages:
        cost = message.token_count or 0
        if kept and used + cost > token_cap:
            break
        kept.append(message)
        used += cost
    return kept


def around(context: int | tuple[int, int]) -> tuple[int, int]:
    """Turns shown (before, after) a hit: `context` each side, or as given."""
    before, after = (context, context) if isinstance(context, int) else context
    if before < 0 or after < 0:
        raise ConfigError(f"search context must be >= 0 turns each side, got {context!r}")
    return before, after


def hit_spans(sequences: Iterable[int],
              context: int | tuple[int, int]) -> list[tuple[int, int]]:
    """The sequence ranges hits and their context cover, merged where they touch, in order."""
    before, after = around(context)
    spans: list[list[int]] = []
    for sequence in sorted(sequences):
        if spans and sequence - before <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], sequence + after)
        else:
            spans.append([sequence - before, sequence + after])
    return [(first, last) for first, last in spans]


def merge_windows(
    hits: Sequence[StoredMessage],
    neighbours: Sequence[StoredMessage],
    *,
    context: int | tuple[int, int],
    token_cap: int,
) -> list[SearchWindow]:
    """Group hits and their neighbouring turns into windows, best hit first, under a token cap.

    Each hit takes the turns `context` sequence numbers each side (or (before, after)) that are
    in `neighbours`; windows that touch or overlap become one. Windows are added in the order
    of their best hit until the cap, and each is shown in conversation order.
    """
    ordered = sorted({m.id: m for m in [*hits, *neighbours]}.values(),
                     key=lambda m: m.sequence or 0)
    sequences = [m.sequence or 0 for m in ordered]
    spans = [(bisect_left(sequences, first), bisect_right(sequences, last) - 1)
             for first, last in hit_spans((m.sequence or 0 for m in hits), context)]
    rank = {hit.id: i for i, hit in enumerate(hits)}
    windows: list[tuple[int, SearchWindow]] = []
    for start, end in spans:
        members = ordered[start : end + 1]
        hit_ids = tuple(sorted((m.id for m in members if m.id in rank), key=rank.__getitem__))
        windows.append((rank[hit_ids[0]], SearchWindow(hit_ids, tuple(members))))
    windows.sort(key=lambda item: item[0])
    kept: list[SearchWindow] = []
    used = 0
    for _, window in windows:
        # The very first window keeps at least its best hit, even over the cap.
        fitted = trim_window(window, max(token_cap - used, 0)) or (
            None if kept else SearchWindow(window.hit_ids[:1], tuple(
                m for m in window.messages if m.id == window.hit_ids[0])))
        if fitted is not None:
            kept.append(fitted)
            used += fitted.token_count
    return kept


def trim_window(window: SearchWindow, room: int) -> SearchWindow | None:
    """The window, or the longest run around its best hit that fits `room` stored tokens.

    The run grows from the best hit (the first of `hit_ids`) one turn at a time, earlier side
    first; None when the best hit alone does not fit.
    """
    if window.token_count <= room:
        return window
    members = window.messages
    low = high = next(i for i, m in enumerate(members) if m.id == window.hit_ids[0])
    used = members[low].token_count or 0
    if used > room:
        return None
    grew = True
    while grew:
        grew = False
        for candidate in (low - 1, high + 1):
            cost = members[candidate].token_count or 0 if 0 <= candidate < len(members) else None
            if cost is not None and used + cost <= room:
                used += cost
                low, high = min(low, candidate), max(high, candidate)
                grew = True
    run = members[low : high + 1]
    return SearchWindow(tuple(h for h in window.hit_ids if any(m.id == h for m in run)), run)


def format_turn(message: StoredMessage, labels: SpeakerLabels | None = None) -> str:
    """One turn on its own line: when (absolute), who, what (for summarizers)."""
    when = message.timestamp.strftime("%Y-%m-%d %H:%M %Z").strip()
    label = labels.of(message) if labels is not None else speaker_label(message)
    return f"[{when}] {turn_text(label, message.content)}"


def format_window(window: SearchWindow, *, day: date | None = None,
                  labels: SpeakerLabels | None = None) -> str:
    """A window as a model reads it: the date when it changes from `day`, then who said what.

    A full date stamp on every line made the text about 30% larger than the turns' stored
    token counts; once per day keeps "yesterday" in a turn meaningful at a fraction of it.
    """
    labels = labels or SpeakerLabels(window.messages)
    lines: list[str] = []
    for message in window.messages:
        if message.timestamp.date() != day:
            day = message.timestamp.date()
            lines.append(message.timestamp.strftime("[%a %Y-%m-%d]"))
        lines.append(turn_text(labels.of(message), message.content))
    return "\n".join(lines)


def format_windows(windows: Sequence[SearchWindow], *,
                   labels: SpeakerLabels | None = None) -> str:
    """Search windows as plain text, separated by a line of dashes; a day is dated once.

    `labels` are the speakers of the whole prompt the text goes in (by default, of these
    windows)."""
    labels = labels or SpeakerLabels(m for w in windows for m in w.messages)
    parts = []
    day = None
    for window in windows:
        parts.append(format_window(window, day=day, labels=labels))
        day = window.messages[-1].timestamp.date()
    return "\n---\n".join(parts)
