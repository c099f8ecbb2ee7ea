"""Two processes storing the same new turn at the same moment (PostgreSQL, each turn written
in one statement without a transaction around it): the turn is kept once, counted once, and
the conversation's next turn still comes after it."""

from __future__ import annotations

import asyncio

import pytest

from threadline.backends.sql import SqlConversationStore
from threadline.history.model import Participant, StoredMessage

ANN = Participant(kind="user", id="ann", display_name="Ann")


@pytest.mark.postgres
async def test_a_turn_stored_twice_at_once_is_kept_once(pg_url: str) -> None:
    async with SqlConversationStore(pg_url) as one, SqlConversationStore(pg_url) as other:
        turns = [StoredMessage(conversation_id="c1", participant=ANN, content=f"turn {i}")
                 for i in range(40)]
        for turn in turns:
            stored = await asyncio.gather(one.append(turn), other.append(turn))
            assert sorted(stored) == [False, True]
        last = StoredMessage(conversation_id="c1", participant=ANN, content="the last one")
        assert await one.append(last)
        kept = await one.get("c1", limit=100)
        assert [m.content for m in kept] == [t.content for t in turns] + ["the last one"]
        [info] = [i for i in await other.list_conversations() if i.conversation_id == "c1"]
        assert info.message_count == len(turns) + 1
