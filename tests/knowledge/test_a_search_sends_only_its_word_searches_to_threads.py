"""A knowledge search on SQLite sends its word searches to the store's reader threads, one per
text, and nothing else: the sections found by meaning are read in one statement on the event
loop (a few rows, as the store reads a few). Sent to a reader thread, that read queued behind
the question's word searches and ended after them. (The source's vectors are read in a
thread once, then kept: the search counted is the second.) On a real SQLite file with the real
embedding model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.knowledge.helpers import support_library
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import SqliteBackend
from threadline.history.beside import parts_beside
from threadline.knowledge.retrieval import ask_queries
from threadline.knowledge.source import KnowledgeAsk

PAGES = {
    "refunds.md": "# Refunds\n\n## Asking for one\nWrite to us within thirty days of the order "
                  "and we send the money back to the card you paid with.\n\n## Gifts\nA gift "
                  "is refunded as store credit to the person who bought it.\n",
    "delivery.md": "# Delivery\n\n## Times\nParcels arrive in two to four working days.\n\n"
                   "## Abroad\nWe ship to most countries; customs fees are the buyer's.\n",
}
ASK = KnowledgeAsk("And for a gift I bought?", (
    "I want my money back for an order.",
    "Write to us within thirty days and we refund the card you paid with.",
    "The order came late, too.",
))


async def test_the_sections_found_by_meaning_are_read_without_a_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'kb.db'}") as store:
        library = await support_library(store, tmp_path / "help", PAGES)
        assert parts_beside(store).vectors is not None
        await library.search("support", ASK, limit=5)  # the source's vectors read and kept
        sent: list[str] = []
        to_thread = SqliteBackend.read

        async def read(backend: SqliteBackend, fn: Any, *args: Any) -> Any:
            sent.append(getattr(fn, "__name__", getattr(getattr(fn, "func", None), "__name__",
                                                        repr(fn))))
            return await to_thread(backend, fn, *args)

        monkeypatch.setattr(SqliteBackend, "read", read)
        found = await library.search("support", ASK, limit=5)
    assert found, "the search found nothing: the test no longer exercises the read"
    assert sent == ["search_hits"] * len(ask_queries(ASK))
