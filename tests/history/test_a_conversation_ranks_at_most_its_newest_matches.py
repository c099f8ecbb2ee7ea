"""A conversation search ranks at most its newest MAX_RANKED matches on SQLite (ranking costs
per match; matching is cheap), and looks for where they start only when the conversation has
more turns than that: a smaller one ranks every match without a statement to find them."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.history.helpers import turn
from threadline.backends.sql import SqlConversationStore
from threadline.history.model import StoredMessage
from threadline.history.search import MAX_RANKED

# The best match by its words: said first, "refund" four times.
BEST = "refund refund refund refund"


def said(conversation_id: str, others: int) -> list[StoredMessage]:
    return [turn(BEST, conversation_id=conversation_id, minute=0), *(
        turn(f"a refund note number {n}", conversation_id=conversation_id, minute=1 + n)
        for n in range(others))]


async def test_only_the_newest_matches_are_ranked_past_the_cap(tmp_path: Path) -> None:
    small, large = f"small-{uuid.uuid4().hex}", f"large-{uuid.uuid4().hex}"
    async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        await store.append_many(said(small, 20))
        await store.append_many(said(large, MAX_RANKED + 10))
        assert (await store.search(small, "refund", limit=3))[0].content == BEST
        # Its first match is older than the newest MAX_RANKED: never ranked.
        assert BEST not in [m.content for m in await store.search(large, "refund", limit=3)]
