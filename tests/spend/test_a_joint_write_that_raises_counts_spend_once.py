"""A delivered reply's joint write that raises (`threadline.after_delivery`) leaves every write
made once: when it failed before its commit, each write is made on its own; when its commit
landed and only the database's answer was lost on the way back, nothing is written again (the
spend's write adds, so writing it again would count the turn twice)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.interceptors.scripted import RecordingChannel, say
from tests.spend.teams import spending_team
from threadline.after_delivery import Committed, ReplyWrites, WritesTogether
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.backends.parts import parts_of, remember
from threadline.backends.sql import SqlConversationStore
from threadline.errors import StoreError


class LostConnection:
    """The backend's real joint write behind a connection that breaks: before the commit
    (`landed=False`), or after it landed, so its answer never comes back (`landed=True`)."""

    def __init__(self, real: WritesTogether, *, landed: bool) -> None:
        self.real = real
        self.landed = landed

    def holds(self, part: object) -> bool:
        return self.real.holds(part)

    async def commit(self, writes: ReplyWrites) -> Committed:
        if self.landed:
            await self.real.commit(writes)
        raise StoreError("the connection to the database was lost")


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text="noted", usage=ModelUsage(input_tokens=300, output_tokens=50))


@pytest.mark.parametrize("landed", [True, False], ids=["answer-lost", "commit-lost"])
async def test_a_joint_write_that_raises_leaves_each_write_made_once(
        sql_store: SqlConversationStore, landed: bool) -> None:
    backend = parts_of(sql_store)
    assert backend.together is not None
    remember(replace(backend, together=LostConnection(backend.together, landed=landed)))
    heard: list[tuple[int, int]] = []
    team, ledger = spending_team(sql_store, answer, on_spend=lambda agent, totals: heard.append(
        (totals.turns, totals.spent.tokens)))
    channel = RecordingChannel()
    team.attach(channel)
    await team.start()
    answered = await team.handle(say("@support hello", conversation_id="c1"), channel)
    await team.stop()

    assert [r.output for r in answered] == ["noted"]
    assert [text for _, text, _ in channel.sent] == ["noted"]
    [row] = await ledger.totals(day="2026-03-05", scope="conversation")
    assert (row.turns, row.spent.tokens, row.reserved_tokens) == (1, 350, 0)
    assert heard == [(1, 350)]  # the agent row's totals, heard once either way
    stored = await sql_store.get("c1")
    assert [m.content for m in stored] == ["@support hello", "noted"]
    assert await sql_store.inbox.open_turns("c1") == []
    [reply] = [m for m in stored if m.content == "noted"]
    delivery = await sql_store.inbox.delivery(reply.id)
    assert delivery is not None and delivery.state == "delivered"
