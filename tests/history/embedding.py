"""The real embedding model for tests (the embeddings extra is part of `dev`), loaded once."""

from __future__ import annotations

from functools import cache

import pytest

from threadline.history.beside import parts_beside
from threadline.history.embedding_model import load_embedder
from threadline.history.indexer import Progress, VectorIndexer
from threadline.history.store import ConversationStore
from threadline.history.vectors import Embedder, VectorIndex


@cache
def _loaded() -> Embedder | None:
    return load_embedder()


def real_embedder() -> Embedder:
    """The installed model; a failure, not a skip, without it: `make` installs it."""
    embedder = _loaded()
    if embedder is None:
        pytest.fail("the embeddings extra is missing from this venv; run `make .venv/.installed`")
    return embedder


def vectors_of(store: ConversationStore) -> VectorIndex:
    vectors: VectorIndex | None = parts_beside(store).vectors
    assert vectors is not None, f"{type(store).__name__} keeps no vectors with numpy installed"
    return vectors


async def index_everything(store: ConversationStore) -> Progress:
    """Give every stored turn its vector now, as `threadline history reindex` does."""
    return await VectorIndexer(store, vectors_of(store), real_embedder()).fill()


def embedded(text: str) -> bytes:
    return real_embedder().embed([text])[0]
