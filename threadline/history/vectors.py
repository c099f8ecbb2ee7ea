"""Meaning-based recall's two seams: the model that turns text into vectors, and the backend
part that keeps one vector per stored turn.

Lexical search (BM25) misses a turn that shares no word with the question ("Which sport does
she coach?" / "I train the under-12 football team"). A small sentence-embedding model, run on
the CPU in this process, finds it by meaning; recall fuses both rankings. Both sides are
optional: without the `threadline[embeddings]` extra, or with a backend that keeps no vectors,
recall is lexical exactly as before.

A vector crosses the backend boundary as bytes: float32, little-endian, L2-normalised, so the
dot product of two is their cosine similarity. A vector is only ever compared with vectors made
by the same model (`Embedder.name`); a different model's vectors are stale and are reindexed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from threadline.history.model import StoredMessage


def vectors_supported() -> bool:
    """Whether a backend can keep and score vectors here: numpy (the embeddings extra) is
    installed. Without it a backend's `vectors` is None and recall is lexical."""
    return importlib.util.find_spec("numpy") is not None


@runtime_checkable
class Embedder(Protocol):
    """A sentence-embedding model whose weights ship in an installed package.

    `embed` is CPU-bound and synchronous: callers run it off the event loop
    (`asyncio.to_thread`), except a short question through static vectors, which costs less
    than the hop (`embedding_model.embeds_at_once`).
    """

    @property
    def name(self) -> str:
        """The model and its version, stored with each vector ("wordllama-l2-256@0.4.0")."""
        ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        """One normalised float32 vector per text, in order (see the module docstring)."""
        ...


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One stored turn found by meaning, with its cosine similarity to the question."""

    message_id: str
    sequence: int
    score: float


@runtime_checkable
class VectorIndex(Protocol):
    """The backend part that keeps turns' vectors (`Backend.vectors`; None: no dense recall).

    Scope is the caller's, exactly as for lexical search: `nearest` never returns a turn of
    another conversation, `nearest_for_speakers` only turns carrying one of `keys` (derived by
    the caller from the person, never from model input). Forgetting a person, deleting turns
    and retention remove their vectors with them.
    """

    async def put_many(self, model: str, vectors: Sequence[tuple[str, bytes]]) -> int:
        """Store (message id, vector) pairs made by `model`; returns how many were stored
        (a turn deleted meanwhile is skipped, not an error)."""
        ...

    async def unembedded(self, model: str, *, limit: int) -> list[StoredMessage]:
        """Up to `limit` stored turns with text and no vector by `model`, oldest first."""
        ...

    async def progress(self, model: str) -> tuple[int, int]:
        """(turns with a vector by `model`, turns with text that should have one)."""
        ...

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
        """The turns of one conversation closest in meaning to `vector`, best first."""
        ...

    async def nearest_places(
        self,
        conversation_id: str,
        vector: bytes,
        model: str,
        *,
        limit: int,
        through_sequence: int | None = None,
    ) -> list[tuple[int, float]]:
        """(sequence, score) of the conversation's turns closest to `vector`, best first, not
        checked against the history: a turn deleted a moment ago may be among them. For a
        search that reads the turns anyway (`FoundByMeaning`), which drops it there."""
        ...

    async def nearest_places_each(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[int, float]]]:
        """For each of `vectors`, `nearest_places` (scored together, not checked against the
        history): for a search that reads only the turns it keeps (`turns_at`)."""
        ...

    async def turns_at(self, conversation_id: str, sequences: Collection[int]
                       ) -> dict[int, StoredMessage]:
        """The turns of one conversation at these sequences, read in one statement, by
        sequence (a turn deleted since is not there)."""
        ...

    async def nearest_turns(
        self, conversation_id: str, vectors: Sequence[bytes], model: str, *, limit: int,
    ) -> list[list[tuple[StoredMessage, float]]]:
        """For each of `vectors`, the turns of one conversation closest to it, best first,
        read together (a search asking with several texts at once reads their turns once)."""
        ...

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
        """One person's turns (carrying one of `keys`) in other conversations, said before
        `before`, closest in meaning first."""
        ...
