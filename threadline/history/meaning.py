"""Finding turns by meaning beside their words: recall's and the search tool's one way to search.

`search_windows` is what recall and `conversation_search` call. When the embedding model is
installed and the backend keeps vectors, the question is embedded (off the event loop, unless
it is short enough to cost less than the hop: `embeds_at_once`) and the
conversation's nearest turns are fused with the lexical ranking inside the store's search;
otherwise the search is the lexical one, exactly as before. A turn not embedded yet (the
background indexer has not reached it) is still found by its words. Scope is the caller's: the
vector index is asked about this conversation only, or about one person's own turns only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from threadline.history.beside import parts_beside
from threadline.history.embedding_model import embeds_at_once, fusion_for, shared_embedder
from threadline.history.fusion import FoundByMeaning, Fusion
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore, SearchWindow
from threadline.history.vectors import Embedder, VectorIndex


@dataclass(frozen=True, slots=True)
class MeaningSearch:
    """The embedding model and the backend's vectors it made, asked together."""

    embedder: Embedder
    index: VectorIndex
    fusion: Fusion

    async def similar(
        self, conversation_id: str, text: str, *, limit: int, exclude_ids: Collection[str],
        through_sequence: int | None,
    ) -> FoundByMeaning:
        """This conversation's turns nearest in meaning to `text`, best first: the first
        `limit` the search shows of those (see `FoundByMeaning`)."""
        vector = await self.embedder_vector(text)
        places = await self.index.nearest_places(
            conversation_id, vector, self.embedder.name, limit=limit + len(set(exclude_ids)),
            through_sequence=through_sequence)
        return FoundByMeaning(tuple(sequence for sequence, _ in places), self.fusion,
                              keep=limit)

    async def similar_for_speakers(
        self, keys: Collection[str], text: str, *, exclude_conversation: str, before: datetime,
        limit: int,
    ) -> list[StoredMessage]:
        """One person's turns elsewhere (carrying one of `keys`) nearest to `text`, best first."""
        vector = await self.embedder_vector(text)
        found = await self.index.nearest_for_speakers(
            keys, vector, self.embedder.name, exclude_conversation=exclude_conversation,
            before=before, limit=limit)
        return [message for message, _ in found]

    async def embedder_vector(self, text: str) -> bytes:
        [vector] = await self.embedder_vectors([text])
        return vector

    async def embedder_vectors(self, texts: Sequence[str]) -> list[bytes]:
        """The texts' vectors, made in one call off the event loop (at once when that costs
        less than the hop: `embeds_at_once`)."""
        if embeds_at_once(self.embedder, texts):
            return self.embedder.embed(list(texts))
        return await asyncio.to_thread(self.embedder.embed, list(texts))


async def meaning_search(store: ConversationStore) -> MeaningSearch | None:
    """Search by meaning for `store`'s turns, or None (no model installed, no vectors kept)."""
    index = parts_beside(store).vectors
    if index is None:
        return None
    embedder = await shared_embedder()
    if embedder is None:
        return None
    return MeaningSearch(embedder, index, fusion_for(embedder))


async def search_windows(
    store: ConversationStore,
    conversation_id: str,
    query: str,
    *,
    limit: int,
    context: int | tuple[int, int],
    token_cap: int,
    exclude_ids: Collection[str] = (),
    through_sequence: int | None = None,
    by_meaning: bool = True,
) -> list[SearchWindow]:
    """Hits for `query` in one conversation with the turns around them, best window first."""
    meaning = await meaning_search(store) if by_meaning else None
    similar = None
    if meaning is not None:
        similar = await meaning.similar(conversation_id, query, limit=limit,
                                        exclude_ids=exclude_ids,
                                        through_sequence=through_sequence)
    return await store.search_context(conversation_id, query, limit=limit, context=context,
                                      token_cap=token_cap, exclude_ids=exclude_ids,
                                      through_sequence=through_sequence, similar=similar)
