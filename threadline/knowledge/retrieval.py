"""Finding the sections that answer a turn, with the conversation around it, by recall's engine.

A follow-up ("and for a child?", "yes") names nothing; the question before it does. So a turn
is searched three ways, and the rankings are fused (reciprocal-rank fusion,
`threadline.history.fusion.fuse_rankings`): the question alone (what it asks, when it asks
anything), the question with the turns just before it (what it follows up), and the whole
conversation so far, newest first (what the conversation is about; a lexical query keeps its
first `MAX_TERMS` words, so the newest count most). Each of the three is recall's own search
(`threadline.history.meaning.search_windows`: BM25 and the embedding model, fused inside the
store) scoped to one source's conversation of sections; no second ranker lives here.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadline.history.fusion import fuse_rankings
from threadline.history.meaning import search_windows
from threadline.history.recall import worth_recalling
from threadline.history.search import MAX_QUERY_CHARS
from threadline.history.store import ConversationStore
from threadline.knowledge.shelf import found_section, source_conversation
from threadline.knowledge.source import FoundSection, KnowledgeAsk

# Turns before the question searched with it as its follow-up query.
FOLLOW_UP_TURNS = 2
# How much each query's ranking counts, and the fusion constant (ranks, not scores, fuse).
QUESTION_WEIGHT = 1.0
FOLLOW_UP_WEIGHT = 1.0
CONVERSATION_WEIGHT = 0.5
FUSION_K = 30
# Sections fused before the document weighting, and how much a document's weight counts.
CANDIDATES = 30
DOCUMENT_WEIGHT = float(__import__("os").environ.get("KW", "1.0"))
# Characters of a query (the search's own limit; the newest text is kept).
QUERY_CHARS = MAX_QUERY_CHARS // 2


def ask_queries(ask: KnowledgeAsk) -> list[tuple[float, str]]:
    """(weight, text) of the searches made for `ask`; see the module docstring."""
    question = ask.question.strip()
    queries: list[tuple[float, str]] = []
    if worth_recalling(question):
        queries.append((QUESTION_WEIGHT, question[:QUERY_CHARS]))
    if ask.earlier:
        recent = [question, *reversed(ask.earlier[-FOLLOW_UP_TURNS:])]
        queries.append((FOLLOW_UP_WEIGHT, _newest_first(recent)))
        if len(ask.earlier) > FOLLOW_UP_TURNS:
            queries.append((CONVERSATION_WEIGHT,
                            _newest_first([question, *reversed(ask.earlier)])))
    return [(weight, text) for weight, text in queries if worth_recalling(text)]


def _newest_first(texts: Sequence[str]) -> str:
    return "\n".join(t.strip() for t in texts if t.strip())[:QUERY_CHARS]


async def search_source(store: ConversationStore, source: str, ask: KnowledgeAsk, *,
                        limit: int, by_meaning: bool = True) -> list[FoundSection]:
    """Up to `limit` of `source`'s sections for `ask`, best first."""
    conversation = source_conversation(source)
    rankings: list[tuple[float, list[str]]] = []
    sections: dict[str, FoundSection] = {}
    for weight, text in ask_queries(ask):
        windows = await search_windows(store, conversation, text, limit=CANDIDATES, context=0,
                                       token_cap=1_000_000_000, by_meaning=by_meaning)
        ranked: list[str] = []
        for window in windows:
            by_id = {turn.id: turn for turn in window.messages}
            for hit in window.hit_ids:
                section = found_section(by_id[hit])
                if section is not None:
                    sections.setdefault(hit, section)
                    ranked.append(hit)
        rankings.append((weight, ranked))
    fused = [sections[i] for i in fuse_rankings(rankings, k=FUSION_K, limit=CANDIDATES)]
    return by_document(fused)[:limit]


def by_document(ranked: Sequence[FoundSection]) -> list[FoundSection]:
    """The sections re-ranked with their document's weight: a section's rank score plus
    `DOCUMENT_WEIGHT` times the summed rank scores of its document's sections. A support
    conversation is about one page far more often than about several, so a section of the
    page most of the hits come from outranks a stray hit elsewhere."""
    own = {s.id: 1 / (FUSION_K + rank) for rank, s in enumerate(ranked)}
    documents: dict[tuple[str, str], float] = {}
    for s in ranked:
        documents[(s.source, s.document)] = documents.get((s.source, s.document), 0.0) + own[s.id]
    score = {s.id: own[s.id] + DOCUMENT_WEIGHT * documents[(s.source, s.document)]
             for s in ranked}
    return sorted(ranked, key=lambda s: -score[s.id])


def fuse_sources(found: Sequence[Sequence[FoundSection]], *, limit: int) -> list[FoundSection]:
    """Several sources' rankings as one, best first."""
    if len(found) == 1:
        return list(found[0][:limit])
    by_key = {(s.source, s.id): s for ranking in found for s in ranking}
    fused = fuse_rankings([(1.0, [(s.source, s.id) for s in ranking]) for ranking in found],
                          k=FUSION_K, limit=limit)
    return [by_key[key] for key in fused]
