"""Three messages of one person within the burst window: one model call, one reply that
answers all three, and each of the three turns recorded and answered. Through `threadline
run`'s runtime on the Telegram fake (a private chat: every message is addressed)."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.bursts.helpers import answer_every_question, tags_in
from tests.fakes.anthropic import FakeAnthropic
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, replies_sent, say
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.backends.sql import SqlConversationStore
from threadline.history.inbox import TurnState

COALESCE = "bursts:\n  mode: coalesce\n  window: 1.0\n"


async def settled(store: SqlConversationStore) -> None:
    async with asyncio.timeout(30):
        while await store.inbox.conversations_waiting():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


def inbox_states(database: Path) -> list[str]:
    """Each inbox turn's state, in the order they were recorded."""
    with closing(sqlite3.connect(database)) as db:
        return [str(row[0]) for row in db.execute(
            "SELECT state FROM threadline_inbox ORDER BY row_id")]


@pytest.mark.parametrize("mode", ["coalesce", "each"])
async def test_three_in_a_row_get_one_reply_in_coalesce_and_three_by_default(
        tmp_path: Path, mode: str) -> None:
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = answer_every_question
        more = COALESCE if mode == "coalesce" else ""
        async with running_in_process(tmp_path, "telegram", where, anthropic.url,
                                      more_yaml=more) as runtime:
            for n in range(3):
                await say("telegram", where, 0, f"question q0-{n}")
                await asyncio.sleep(0.2)
            store: SqlConversationStore = runtime.store
            await until(lambda: len(replies_sent("telegram", where)) >= 1)
            await settled(store)
            await asyncio.sleep(0.3)
            turns = await store.get((await store.list_conversations())[0].conversation_id)
    replies = replies_sent("telegram", where)
    assert inbox_states(tmp_path / "threadline.db") == [TurnState.ANSWERED.value] * 3
    assert [t.content for t in turns if t.participant.kind == "user"] == [
        f"question q0-{n}" for n in range(3)]
    if mode == "coalesce":
        assert len(anthropic.requests) == 1
        assert len(replies) == 1
        assert tags_in(replies[0]) == ["q0-0", "q0-1", "q0-2"]
        assert [t.participant.kind for t in turns] == ["user", "user", "user", "agent"]
    else:
        assert len(anthropic.requests) == 3
        assert len(replies) == 3
