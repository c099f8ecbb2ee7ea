"""While capture's outbox holds turns the store has not taken yet, a team's delivered reply is
written behind them, never ahead (`threadline.after_delivery`): its ledger entry and spend are
still written together at once, the reply waits in the outbox, and its turn is marked answered
on its own once the reply is on disk.

The store stays up: the outboxed turn is held back by another PostgreSQL connection holding its
conversation's row lock, so the writer's replay waits on it (as it would behind a long
transaction of another replica), while the team's own conversation writes freely."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from tests.interceptors.scripted import RecordingChannel, say
from tests.spend.teams import spending_team
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.backends.sql import SqlConversationStore
from threadline.interceptors.capture import DurableWriter
from threadline.interceptors.outbox import Outbox


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        yield url
    finally:
        await drop_pg_schema(url)


async def row_locked(url: str, conversation_id: str) -> asyncpg.Connection:
    """Another connection, in a transaction holding `conversation_id`'s row lock."""
    base, _, options = url.partition("?")
    holder = await asyncpg.connect(
        base.replace("postgresql+asyncpg://", "postgresql://"),
        server_settings={"search_path": options.rsplit("search_path=", 1)[-1]})
    await holder.execute("BEGIN")
    await holder.execute("SELECT 1 FROM threadline_conversations WHERE conversation_id = $1 "
                         "FOR UPDATE", conversation_id)
    return holder


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text="noted", usage=ModelUsage(input_tokens=300, output_tokens=50))


async def test_a_reply_waits_behind_outboxed_turns_and_its_turn_is_answered(
        pg_url: str, tmp_path: Path) -> None:
    async with SqlConversationStore(pg_url) as store:
        await store.append(say("an earlier word", conversation_id="c0"))
        holder = await row_locked(pg_url, "c0")
        outbox = Outbox(tmp_path / "outbox.jsonl")
        held = say("said while the store was away", conversation_id="c0")
        await outbox.add([held])
        team, ledger = spending_team(store, answer, writer=DurableWriter(store, outbox))
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()  # the writer's replay of `held` now waits on the row lock
        try:
            answered = await team.handle(say("@support hello", conversation_id="c1"), channel)
            assert [r.output for r in answered] == ["noted"]
            assert [text for _, text, _ in channel.sent] == ["noted"]
            queued = [m.content for m in await outbox.pending()]
            assert queued[0] == held.content and queued[-1] == "noted"  # behind, never ahead
            assert "noted" not in [m.content for m in await store.get("c1")]
            # Written at once all the same: the ledger's entry, the spend, the turn answered.
            reply = (await outbox.pending())[-1]
            delivery = await store.inbox.delivery(reply.id)
            assert delivery is not None and delivery.state == "delivered"
            [row] = await ledger.totals(day="2026-03-05", scope="conversation")
            assert (row.turns, row.spent.tokens, row.reserved_tokens) == (1, 350, 0)
            assert await store.inbox.open_turns("c1") == []
        finally:
            await holder.execute("ROLLBACK")
            await holder.close()
        assert await team.writer.replay()
        await team.stop()
        assert [m.content for m in await store.get("c0")] == ["an earlier word", held.content]
        assert [m.content for m in await store.get("c1")] == ["@support hello", "noted"]
