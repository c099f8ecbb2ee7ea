"""Finding turns by meaning beside their words: recall's and the search tool's one way to search.

`search_windows` is what recall and `conversation_search` call. When the embedding model is
installed and the backend keeps vectors, the question is embedded (off the event loop) and the
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
from threadline.history.embedding_model import shared_embedder
from threadline.history.model import StoredMessage
from threadline.history.search import fuse_ranks
from threadline.history.store import ConversationStore, SearchWindow
from threadline.history.vectors import Embedder, VectorIndex


@dataclass(frozen=True, slots=True)
class MeaningSearch:
    """The embedding model and the backend's vectors it made, asked together."""

    embedder: Embedder
    index: VectorIndex

    async def similar(
        self, conversation_id: str, text: str, *, limit: int, exclude_ids: Collection[str],
        through_sequence: int | None,
    ) -> list[int]:
        """Sequences of this conversation's turns nearest in meaning to `text`, best first."""
        vector = await self.embedder_vector(text)
        hits = await self.index.nearest(conversation_id, vector, self.embedder.name, limit=limit,
                                        exclude_ids=exclude_ids,
                                        through_sequence=through_sequence)
        return [hit.sequence for hit in hits]

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
        [vector] = await asyncio.to_thread(self.embedder.embed, [text])
        return vector


async def meaning_search(store: ConversationStore) -> MeaningSearch | None:
    """Search by meaning for `store`'s turns, or None (no model installed, no vectors kept)."""
    index = parts_beside(store).vectors
    if index is None:
        return None
    embedder = await shared_embedder()
    return MeaningSearch(embedder, index) if embedder is not None else None


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
    similar: Sequence[int] = ()
    if meaning is not None:
        similar = await meaning.similar(conversation_id, query, limit=limit,
                                        exclude_ids=exclude_ids,
                                        through_sequence=through_sequence)
    return await store.search_context(conversation_id, query, limit=limit, context=context,
                                      token_cap=token_cap, exclude_ids=exclude_ids,
                                      through_sequence=through_sequence, similar=similar)


def fuse_messages(lexical: Sequence[StoredMessage], similar: Sequence[StoredMessage], *,
                  limit: int) -> list[StoredMessage]:
    """Turns found by words and by meaning in one ranking (`search.fuse_ranks`), best first."""
    by_id = {m.id: m for m in [*similar, *lexical]}
    keys = {message_id: n for n, message_id in enumerate(by_id)}
    ranked = fuse_ranks([keys[m.id] for m in lexical], [keys[m.id] for m in similar],
                        limit=limit)
    ids = list(by_id)
    return [by_id[ids[n]] for n in ranked]
