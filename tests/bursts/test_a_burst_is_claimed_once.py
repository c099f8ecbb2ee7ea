"""A burst's claim in the inbox, on each inbox: a turn is claimed by one burst only, only
while it is open, and the times it was received are the inbox's."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import pytest

from threadline.backends.sql import SqlConversationStore
from threadline.history.inbox import BurstInbox, MemoryInbox, TurnInbox, TurnState
from threadline.history.model import MessageMetadata, Participant, StoredMessage


class Inbox(TurnInbox, BurstInbox, Protocol):
    """An inbox that keeps bursts (both of ours do)."""


def said(n: int) -> StoredMessage:
    return StoredMessage(
        id=f"c1:{n}", conversation_id="c1", participant=Participant(kind="user", id="u1"),
        content=f"message {n}", timestamp=datetime.now(UTC), scope="dm",
        metadata=MessageMetadata(channel_type="local", message_id=str(n)))


@pytest.fixture(params=["memory", "sqlite"])
async def inbox(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Inbox]:
    if request.param == "memory":
        yield MemoryInbox()
        return
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}") as store:
        yield store.inbox


async def test_a_turn_joins_one_burst_and_only_while_open(inbox: Inbox) -> None:
    before = time.time()
    for n in range(4):
        assert await inbox.receive(said(n), channel="local")
    timed = await inbox.open_turns_timed("c1")
    assert [t.turn.turn_id for t in timed] == [f"c1:{n}" for n in range(4)]
    assert all(before - 1 <= t.received_at <= time.time() + 1 for t in timed)
    assert {t.burst for t in timed} == {None}

    assert await inbox.claim_burst("c1:0", ["c1:0", "c1:1"]) == ["c1:0", "c1:1"]
    # Another burst cannot take a claimed turn; a closed one (here deleted) joins none.
    assert await inbox.cancel_open("c1:3") is TurnState.RECEIVED
    assert await inbox.claim_burst("c1:2", ["c1:1", "c1:2", "c1:3"]) == ["c1:2"]
    assert [(t.turn.turn_id, t.burst) for t in await inbox.open_turns_timed("c1")] == [
        ("c1:0", "c1:0"), ("c1:1", "c1:0"), ("c1:2", "c1:2")]
