"""One ranking of a source's sections from the rankings of a turn's searches, with the document
they come from counted.

A support conversation stays on one document: the page the user's problem is on. A question
alone names a few of its words ("and for my children?"), which other pages hold too; the
conversation's searches, taken together, name the page. So a section scores its
reciprocal-rank fusion over the searches (`threadline.history.fusion`) plus its document's
score: each search made with the conversation (`pages`; not the question alone, whose few
words are on other pages too, nor a conversation's first question, which has no conversation
yet) gives the documents of its best sections `weight / (1 + place)` (a document counted at
its best place in that search, so a long page's many sections do not outvote a short page's
one), and the document that scores highest lifts its sections by `DOCUMENT_WEIGHT` times the
best section's own score, the others in proportion. Sections of the conversation's page then
come before a stray section of another page that shares the question's words, and a follow-up
is answered from the page the conversation is about.

And a page's opening says what the page is for: "I need information about student loan
default" is answered by the first lines of the page on it, whose words the question repeats
only through the title. So the opening section of the best-ranked section's document
(`lead`) is placed second, right after that section.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)

# The best sections of each search whose documents are counted.
DOCUMENT_DEPTH = 10
# How much the best document's score counts, as a share of the best section's own score.
DOCUMENT_WEIGHT = 1.0


def rank_sections(rankings: Sequence[tuple[float, Sequence[Key]]], *,
                  pages: Sequence[tuple[float, Sequence[Key]]],
                  document: Callable[[Key], str], k: int) -> list[Key]:
    """Every section of `rankings` (weight, keys best first), best first: reciprocal-rank
    fusion (constant `k`) plus its document's score over `pages`, the rankings that say which
    page the conversation is on (none: the fusion alone; see the module docstring)."""
    scores: dict[Key, float] = {}
    for weight, ranking in rankings:
        for place, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + weight / (k + place)
    if not scores:
        return []
    documents = document_scores(pages, document=document)
    lift = DOCUMENT_WEIGHT * max(scores.values()) / max(documents.values(), default=1.0)
    order = {key: n for n, key in enumerate(scores)}
    return sorted(scores, key=lambda key: (
        -(scores[key] + lift * documents.get(document(key), 0.0)), order[key]))


def document_scores(rankings: Sequence[tuple[float, Sequence[Key]]], *,
                    document: Callable[[Key], str]) -> Mapping[str, float]:
    """Each document's score over `rankings`: `weight / (1 + place)` per ranking, at the
    place of its best section among the first `DOCUMENT_DEPTH` (a document found only below
    them is not in the mapping)."""
    scores: dict[str, float] = {}
    for weight, ranking in rankings:
        counted: set[str] = set()
        for place, key in enumerate(ranking[:DOCUMENT_DEPTH]):
            name = document(key)
            if name not in counted:
                counted.add(name)
                scores[name] = scores.get(name, 0.0) + weight / (1 + place)
    return scores


def with_lead(ranked: Sequence[Key], lead: Key | None) -> list[Key]:
    """`ranked` with `lead` (the opening section of the first one's document) second."""
    if lead is None or not ranked or ranked[0] == lead:
        return list(ranked)
    return [ranked[0], lead, *(key for key in ranked[1:] if key != lead)]
