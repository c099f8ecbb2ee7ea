"""Finding the sections that answer a turn, with the conversation around it, by recall's engine.

A follow-up ("and for a child?", "yes") names little; the question before it does. So a turn
is searched with the question and the turns just before it (what it follows up), with the
whole conversation so far, newest first (what the conversation is about; a lexical query keeps
its first `MAX_TERMS` words, so the newest count most), and with the question alone (what is
asked now, when it has words to search with); the first question of a conversation is
searched alone. The rankings become one with the documents that the searches with the
conversation found counted, so the conversation's page is where a follow-up is answered
from, and the best section's page opens with its first lines (`threadline.knowledge.ranking`).
Each search is recall's own (the store's BM25 and the embedding model's nearest, fused as
recall fuses them, `threadline.history.fusion`, except that the ranking by meaning counts as
much as the lexical one: a page is worded by the team, not by the user who asks) scoped to
one source's conversation of sections; a big source's words are ranked in this process instead
(`threadline.knowledge.kept_words`), and only the sections shown are read (`_search_kept`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from threadline.history.fusion import Fusion, fuse_found, fuse_messages, fuse_rankings
from threadline.history.meaning import MeaningSearch, meaning_search
from threadline.history.model import StoredMessage
from threadline.history.recall import worth_searching
from threadline.history.search import MAX_QUERY_CHARS, SearchQuery
from threadline.history.store import ConversationStore
from threadline.knowledge.kept_words import KeptSource, kept_words
from threadline.knowledge.ranking import rank_sections, with_lead
from threadline.knowledge.shelf import found_section, lead_id, source_conversation
from threadline.knowledge.source import FoundSection, KnowledgeAsk

# Turns before the question searched with it as its follow-up query.
FOLLOW_UP_TURNS = 2
# How much each query's ranking counts, and the fusion constant (ranks, not scores, fuse).
# On the development half of doc2dial (bench/knowledge.py, all 1,976 questions, SQLite, the
# ranking's first 1,000 tokens), with the documents counted, the question alone beside the
# follow-up and conversation queries (weights 1, 1) reached 84.0% of all questions without it,
# 85.7% at 0.25, 86.4% at 0.5 and 0.75, 85.7% at 1; one turn or three in the follow-up query
# instead of two, 83.7% and 83.8%; the conversation at 0.5, 81.9%, at 2, 84.5%.
FOLLOW_UP_WEIGHT = 1.0
CONVERSATION_WEIGHT = 1.0
QUESTION_WEIGHT = 0.5
FUSION_K = 30
# How much a search's ranking by meaning counts beside its lexical one (each 1 / (k + rank),
# the model's own k): as much. Recall's weight for the model (`embedding_model.MODELS`: 0.3 for
# WordLlama) was measured on conversations; a team's page is worded by the team, not by the
# user who asks ("I want my money back" / "Refunds"). On kb-dev (bench/knowledge.py, block +
# one search, WordLlama, k 60, this module otherwise as it is) the weight 0.3 reached 89.9% of
# all questions, 0.5 89.8%, 0.75 90.7%, 1 90.7%, 1.5 89.2%; the lexical ranking alone 86.7%.
# MiniLM's measured weight is 1 already.
MEANING_WEIGHT = 1.0
# Sections each search ranks (more than a block shows: fusion reorders them).
CANDIDATES = 30
# A search's token cap: sections are chosen by the block's own room, not by the search.
UNCAPPED_TOKENS = 1_000_000_000
# Sections read beyond a search's limit from a big source's kept ranking, in place of any
# deleted since the kept words were built (`_search_kept`).
READ_SPARE = 4
# Characters of a query (the search's own limit; the newest text is kept).
QUERY_CHARS = MAX_QUERY_CHARS // 2


@dataclass(frozen=True, slots=True)
class Query:
    """One search made for a turn: its text (and its words, parsed once: whether it is worth
    a search and the kept words' ranking both read them), how much its ranking counts, and
    whether it carries the conversation (only those say which page the conversation is on)."""

    weight: float
    text: str
    with_conversation: bool
    words: SearchQuery

    @classmethod
    def of(cls, weight: float, text: str, *, with_conversation: bool) -> Query:
        return cls(weight, text, with_conversation, SearchQuery.parse(text))


def ask_queries(ask: KnowledgeAsk) -> list[Query]:
    """The searches made for `ask`; see the module docstring."""
    question = ask.question.strip()
    queries: list[Query] = []
    if not ask.earlier:
        queries.append(Query.of(FOLLOW_UP_WEIGHT, question[:QUERY_CHARS],
                                with_conversation=False))
    else:
        recent = [question, *reversed(ask.earlier[-FOLLOW_UP_TURNS:])]
        queries.append(Query.of(FOLLOW_UP_WEIGHT, _newest_first(recent),
                                with_conversation=True))
        if len(ask.earlier) > FOLLOW_UP_TURNS:
            queries.append(Query.of(CONVERSATION_WEIGHT,
                                    _newest_first([question, *reversed(ask.earlier)]),
                                    with_conversation=True))
        queries.append(Query.of(QUESTION_WEIGHT, question[:QUERY_CHARS],
                                with_conversation=False))
    return [query for query in queries if worth_searching(query.words)]


def _newest_first(texts: Sequence[str]) -> str:
    return "\n".join(t.strip() for t in texts if t.strip())[:QUERY_CHARS]


async def search_source(store: ConversationStore, source: str, ask: KnowledgeAsk, *,
                        limit: int, by_meaning: bool = True) -> list[FoundSection]:
    """Up to `limit` of `source`'s sections for `ask`, best first: the searches' rankings
    as one, their documents counted, the best one's document's opening section second
    (`threadline.knowledge.ranking`)."""
    conversation = source_conversation(source)
    meaning = await meaning_search(store) if by_meaning else None
    queries = ask_queries(ask)
    words = kept_words(store) if meaning is not None and queries else None
    kept = words.usable(conversation) if words is not None else None
    if kept is not None and meaning is not None and all(
            kept.words.answers(query.words) for query in queries):
        return await _search_kept(kept, meaning, conversation, queries, limit=limit)
    rankings: list[tuple[float, list[str]]] = []
    pages: list[tuple[float, list[str]]] = []
    turns: dict[str, StoredMessage] = {}
    sections: dict[str, FoundSection] = {}
    found = await _ranked_turns(store, meaning, conversation, [q.text for q in queries])
    for query, ranked_turns in zip(queries, found, strict=True):
        ranked: list[str] = []
        for turn in ranked_turns:
            section = found_section(turn)
            if section is not None:
                sections.setdefault(turn.id, section)
                turns.setdefault(turn.id, turn)
                ranked.append(turn.id)
        rankings.append((query.weight, ranked))
        if query.with_conversation:
            pages.append((query.weight, ranked))
    # Only the searches with the conversation count the documents. The question alone names a
    # few words other pages hold too: counting its documents beside them reached 90.1% of
    # kb-dev's questions against 90.7% (bench/knowledge.py, block + one search; halves 88.5 /
    # 91.7 against 89.2 / 92.1). A first question, searched alone, counts none: counting them
    # took its share from 82.9% to 80.7% (at 0.3 of the weight) and 79.5% (at the whole), in
    # the ranking's first 1,000 tokens.
    best = rank_sections(rankings, pages=pages, document=lambda i: sections[i].document,
                         k=FUSION_K)
    if not best:
        return []
    lead = await _opening(store, conversation, lead_id(turns[best[0]]), sections)
    return [sections[i] for i in with_lead(best, lead)[:limit]]


async def _search_kept(kept: KeptSource, meaning: MeaningSearch, conversation: str,
                       queries: Sequence[Query], *, limit: int) -> list[FoundSection]:
    """`search_source` over a big source's kept words (`threadline.knowledge.kept_words`):
    each text ranked by them and by meaning, fused, and the sections ranked with their
    documents counted, all by sequence, before any is read; then the best `limit` and the
    lead are read in one statement (the ones read first were 125 rows a question at 100,000
    sections, most of them never shown). A section the kept words do not know (added since
    they were built, found by meaning) is read before the ranking, for its document; one
    deleted since is left out where it was ranked, which READ_SPARE more read make up for."""
    by_words = [kept.words.best(query.words, limit=CANDIDATES) for query in queries]
    vectors = await meaning.embedder_vectors([query.text for query in queries])
    nearest = await meaning.index.nearest_places_each(
        conversation, vectors, meaning.embedder.name, limit=CANDIDATES)
    fusion = document_fusion(meaning.fusion)
    fused = [fuse_found(lexical, [sequence for sequence, _ in found], fusion=fusion,
                        limit=CANDIDATES)
             for lexical, found in zip(by_words, nearest, strict=True)]
    found = {s for ranked in fused for s in ranked}
    documents = kept.documents_at(found)
    unknown = found - documents.keys()
    read = await meaning.index.turns_at(conversation, unknown) if unknown else {}
    for sequence, turn in read.items():
        section = found_section(turn)
        if section is not None:
            documents[sequence] = (section.document, None)
    fused = [[s for s in ranked if s in documents] for ranked in fused]

    rankings = [(query.weight, ranked) for query, ranked in zip(queries, fused, strict=True)]
    best = rank_sections(rankings, pages=[(query.weight, ranked) for query, ranked
                                          in zip(queries, fused, strict=True)
                                          if query.with_conversation],
                         document=lambda sequence: documents[sequence][0], k=FUSION_K)
    if not best:
        return []
    ordered = with_lead(best, documents[best[0]][1])
    wanted = [s for s in ordered[:limit + READ_SPARE] if s not in read]
    read |= await meaning.index.turns_at(conversation, wanted)
    shown = (found_section(read[s]) for s in ordered if s in read)
    return [section for section in shown if section is not None][:limit]


async def _opening(store: ConversationStore, conversation: str, lead: str | None,
                   sections: dict[str, FoundSection]) -> str | None:
    """`lead` (a document's opening section), read into `sections` when no search found it;
    None when it is not stored (a sync in between replaced the document)."""
    if lead is not None and lead not in sections:
        for turn in await store.get_by_ids(conversation, [lead]):
            section = found_section(turn)
            if section is not None:
                sections[turn.id] = section
    return lead if lead in sections else None


async def _ranked_turns(store: ConversationStore, meaning: MeaningSearch | None,
                        conversation: str, texts: Sequence[str]) -> list[list[StoredMessage]]:
    """Each text's search of a source's sections, best first: BM25 (the store's `search`)
    and, when the model and vectors are there, the nearest by meaning, fused as person memory
    fuses them (`fuse_messages`). Recall's windows are not used: they merge neighbouring hits,
    and a document's sections are neighbours. Every search runs at once (the store's threads
    and the model's), the texts are embedded in one call and the sections found by meaning
    read in one statement for all of them (`nearest_turns`): each step was a thread hop per
    text, and on a loaded machine the hops, not the work, were most of a search's time."""
    searched = asyncio.gather(*(
        store.search(conversation, text, limit=CANDIDATES, token_cap=UNCAPPED_TOKENS)
        for text in texts))
    if meaning is None or not texts:
        return list(await searched)
    lexical, nearest = await asyncio.gather(searched, _nearest(meaning, conversation, texts))
    fusion = document_fusion(meaning.fusion)
    return [fuse_messages(turns, [turn for turn, _ in found], fusion=fusion, limit=CANDIDATES)
            for turns, found in zip(lexical, nearest, strict=True)]


def document_fusion(model: Fusion) -> Fusion:
    """How a search of documents fuses its two rankings: the model's fusion constant, the
    ranking by meaning weighed `MEANING_WEIGHT`."""
    return replace(model, weight=MEANING_WEIGHT)


async def _nearest(meaning: MeaningSearch, conversation: str, texts: Sequence[str]
                   ) -> list[list[tuple[StoredMessage, float]]]:
    vectors = await meaning.embedder_vectors(texts)
    return await meaning.index.nearest_turns(conversation, vectors, meaning.embedder.name,
                                             limit=CANDIDATES)


def fuse_sources(found: Sequence[Sequence[FoundSection]], *, limit: int) -> list[FoundSection]:
    """Several sources' rankings as one, best first."""
    if len(found) == 1:
        return list(found[0][:limit])
    by_key = {(s.source, s.id): s for ranking in found for s in ranking}
    fused = fuse_rankings([(1.0, [(s.source, s.id) for s in ranking]) for ranking in found],
                          k=FUSION_K, limit=limit)
    return [by_key[key] for key in fused]
