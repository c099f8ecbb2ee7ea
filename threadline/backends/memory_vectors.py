"""The memory backend's vectors: one per turn, in this process, beside `InMemoryConversationStore`.

The turns a search may return are read from the history first, inside the asked scope (one
conversation up to a sequence, or one person's turns before a moment), and only their vectors
are scored, so a vector can never surface a turn outside the scope. An edit or a deletion
heard from the history drops the turn's vector (an edited turn is embedded again); a turn the
history evicts is never read, and its vector is dropped at the next prune.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from threadline.history.changes import HistoryChange
from threadline.history.memory import InMemoryConversationStore
from threadline.history.model import StoredMessage
from threadline.history.similarity import as_matrix, best, checked, embeddable
from threadline.history.speakers import speaker_keys
from threadline.history.vectors import VectorHit


class MemoryVectorIndex:
    """`VectorIndex` in process memory (see the module docstring)."""

    def __init__(self, history: InMemoryConversationStore) -> None:
        self.history = history
        # message id -> (model, vector)
        self._vectors: dict[str, tuple[str, bytes]] = {}
        history.subscribe(self._heard)

    def _heard(self, change: HistoryChange) -> None:
        if change.kind in ("edit", "delete"):
            for message_id in change.message_ids:
                self._vectors.pop(message_id, None)

    def _vector(self, message: StoredMessage, model: str) -> bytes | None:
        kept = self._vectors.get(message.id)
        return kept[1] if kept is not None and kept[0] == model else None

    async def put_many(self, model: str, vectors: Sequence[tuple[str, bytes]]) -> int:
        stored = 0
        for message_id, vector in vectors:
            if self.history.conversation_of(message_id) is None:
                continue  # deleted or evicted meanwhile
            self._vectors[message_id] = (model, checked(vector, message_id=message_id,
                                                        model=model))
            stored += 1
        if len(self._vectors) > 2 * max(await self.history.count(), 1_000):
            self._vectors = {key: kept for key, kept in self._vectors.items()
                             if self.history.conversation_of(key) is not None}
        return stored

    async def _all_turns(self) -> list[StoredMessage]:
        conversations = await self.history.list_conversations(
            limit=self.history.max_conversations)
        return [turn for info in conversations
                for turn in await self.history.get(info.conversation_id) if embeddable(turn)]

    async def unembedded(self, model: str, *, limit: int) -> list[StoredMessage]:
        waiting = [turn for turn in await self._all_turns() if self._vector(turn, model) is None]
        waiting.sort(key=lambda turn: (turn.timestamp, turn.conversation_id, turn.sequence or 0))
        return waiting[:max(limit, 0)]

    async def progress(self, model: str) -> tuple[int, int]:
        turns = await self._all_turns()
        return sum(1 for turn in turns if self._vector(turn, model) is not None), len(turns)

    async def nearest(
        self,
        conversation_id: str,
        vector: bytes,
        model: str,
        *,
        limit: int,
        exclude_ids: Collection[str] = (),
        through_sequence: int | None = None,
    ) -> list[VectorHit]:
        excluded = set(exclude_ids)
        turns = await self.history.get(conversation_id, through_sequence=through_sequence)
        found = [(turn, kept) for turn in turns if turn.id not in excluded and embeddable(turn)
                 and (kept := self._vector(turn, model)) is not None]
        ranked = best(as_matrix([kept for _, kept in found]), vector, limit=limit)
        return [VectorHit(found[row][0].id, found[row][0].sequence or 0, score)
                for row, score in ranked]

    async def nearest_places(
        self,
        conversation_id: str,
        vector: bytes,
        model: str,
        *,
        limit: int,
        through_sequence: int | None = None,
    ) -> list[tuple[int, float]]:
        hits = await self.nearest(conversation_id, vector, model, limit=limit,
                                  through_sequence=through_sequence)
        return [(hit.sequence, hit.score) for hit in hits]

    async def nearest_places_each(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[int, float]]]:
        return [await self.nearest_places(conversation_id, vector, model, limit=limit)
                for vector in vectors]

    async def turns_at(self, conversation_id: str, sequences: Collection[int]
                       ) -> dict[int, StoredMessage]:
        wanted = set(sequences)
        return {turn.sequence or 0: turn for turn in await self.history.get(conversation_id)
                if turn.sequence in wanted} if wanted else {}

    async def nearest_turns(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[StoredMessage, float]]]:
        found = []
        for vector in vectors:
            hits = await self.nearest(conversation_id, vector, model, limit=limit)
            turns = {t.id: t for t in await self.history.get_by_ids(
                conversation_id, [hit.message_id for hit in hits])}
            found.append([(turns[hit.message_id], hit.score) for hit in hits
                          if hit.message_id in turns])
        return found

    async def nearest_for_speakers(
        self,
        keys: Collection[str],
        vector: bytes,
        model: str,
        *,
        exclude_conversation: str,
        before: datetime,
        limit: int,
    ) -> list[tuple[StoredMessage, float]]:
        wanted = set(keys)
        if not wanted:
            return []
        conversations = await self.history.list_conversations(
            limit=self.history.max_conversations)
        found = [
            (turn, kept)
            for info in conversations if info.conversation_id != exclude_conversation
            for turn in await self.history.get(info.conversation_id, before=before)
            if embeddable(turn) and wanted.intersection(speaker_keys(turn) or ())
            and (kept := self._vector(turn, model)) is not None
        ]
        ranked = best(as_matrix([kept for _, kept in found]), vector, limit=limit)
        return [(found[row][0], score) for row, score in ranked]
