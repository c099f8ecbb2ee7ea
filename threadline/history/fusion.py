"""Fusing the lexical ranking of turns with the one by meaning into one ranking.

Reciprocal-rank fusion, as the memory systems that lead the field do (BM25 beside a small
embedding model): each ranking gives a turn `weight / (k + rank)`, so a turn both find comes
first and one only meaning finds ("Which sport does she coach?" / "I train the under-12
football team") still gets in. Ranks, not scores: BM25's and cosine's scales have nothing in
common. Without turns found by meaning the result is the lexical ranking, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from threadline.history.model import StoredMessage

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Fusion:
    """How a ranking by meaning joins the lexical one (reciprocal-rank fusion, see fuse_ranks):
    rank r (from 0) scores `weight / (k + r)`, a lexical rank `1 / (k + r)`. Each model has
    its own, measured on the development half of LoCoMo only (`embedding_model.MODELS`)."""

    k: int = 60
    weight: float = 0.3


@dataclass(frozen=True, slots=True)
class FoundByMeaning:
    """Sequences of a conversation's turns nearest in meaning to a question, best first, and
    how their ranking joins the lexical one.

    The search they are given to keeps, in order, those whose turns it may show (held in the
    history and inside its scope), the first `keep` of them (None: all): they are fetched
    `keep` plus the excluded turns' number, so an excluded or deleted turn never takes a place,
    and checked inside the search's own read.
    """

    sequences: tuple[int, ...]
    fusion: Fusion = Fusion()
    keep: int | None = None

    def shown(self, may_show: Callable[[int], bool]) -> FoundByMeaning:
        """These, only the first `keep` of those `may_show` accepts."""
        kept = tuple(s for s in self.sequences if may_show(s))[:self.keep]
        return replace(self, sequences=kept, keep=None)


def fuse_ranks(lexical: Sequence[int], similar: FoundByMeaning | None, *, limit: int
               ) -> list[int]:
    """One ranking of turn sequences from the lexical one and the one by meaning, best first."""
    if similar is None or not similar.sequences:
        return list(lexical[:limit])
    return fuse_rankings(((1.0, lexical), (similar.fusion.weight, similar.sequences)),
                         k=similar.fusion.k, limit=limit, tie_break=lambda s: s)


def fuse_rankings(rankings: Sequence[tuple[float, Sequence[Key]]], *, k: int, limit: int,
                  tie_break: Callable[[Key], Any] | None = None) -> list[Key]:
    """Reciprocal-rank fusion of weighted rankings: rank r (from 0) of a ranking of weight w
    scores `w / (k + r)`; ties go by `tie_break`, else by the order first seen."""
    scores: dict[Key, float] = {}
    for weight, ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    order = {key: n for n, key in enumerate(scores)}
    tie = tie_break or order.__getitem__
    return sorted(scores, key=lambda key: (-scores[key], tie(key)))[:limit]


def fuse_messages(lexical: Sequence[StoredMessage], similar: Sequence[StoredMessage], *,
                  fusion: Fusion, limit: int) -> list[StoredMessage]:
    """Turns found by words and by meaning (one person's, across conversations) in one
    ranking, best first."""
    by_id = {m.id: m for m in [*lexical, *similar]}
    return [by_id[message_id] for message_id in fuse_found(
        [m.id for m in lexical], [m.id for m in similar], fusion=fusion, limit=limit)]


def fuse_found(lexical: Sequence[Key], similar: Sequence[Key], *, fusion: Fusion,
               limit: int) -> list[Key]:
    """Keys of turns found by words and by meaning in one ranking, best first (ties go to the
    lexical order, then meaning's)."""
    places = {key: n for n, key in enumerate(dict.fromkeys([*lexical, *similar]))}
    ranked = fuse_ranks([places[key] for key in lexical],
                        FoundByMeaning(tuple(places[key] for key in similar), fusion),
                        limit=limit)
    keys = list(places)
    return [keys[n] for n in ranked]
