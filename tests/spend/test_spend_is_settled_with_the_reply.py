"""In a team, a turn's spend is settled in the write that records its delivered reply (one
commit, `threadline.after_delivery`), and a turn that fails still gives back what it held."""

from __future__ import annotations

from tests.interceptors.scripted import RecordingChannel, say
from tests.spend.teams import spending_team
from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.backends.sql import SqlConversationStore


def answer_or_fail(request: ModelRequest) -> ModelResponse:
    if "fail" in request.messages[-1].content:
        raise RuntimeError("the model fell over")
    return ModelResponse(text="noted", usage=ModelUsage(input_tokens=300, output_tokens=50))


async def test_spend_is_settled_with_the_reply_and_after_a_failed_turn(
        sql_store: SqlConversationStore) -> None:
    heard: list[int] = []
    team, ledger = spending_team(sql_store, answer_or_fail,
                                 on_spend=lambda agent, totals: heard.append(totals.turns))
    channel = RecordingChannel()
    team.attach(channel)
    await team.start()
    answered = await team.handle(say("@support hello", conversation_id="c1"), channel)
    failed = await team.handle(say("@support fail now", conversation_id="c1"), channel)
    await team.stop()

    assert [r.output for r in answered] == ["noted"] and failed == []
    [row] = await ledger.totals(day="2026-03-05", scope="conversation")
    # Both turns counted; the failed one gave back its hold of 400 and spent nothing.
    assert (row.spent.tokens, row.reserved_tokens, row.turns) == (350, 0, 2)
    assert heard == [1, 2]  # the agent row's totals, heard after each settlement
    assert [text for _, text, _ in channel.sent] == ["noted"]
