"""An explicit mention wins over the thread: `@billing` in support's thread reaches billing alone,
and billing answers the turn it was asked."""

from __future__ import annotations

from pathlib import Path

from tests.interceptors.scripted import ANN, RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team


async def test_a_mention_of_billing_in_supports_thread_reaches_billing_alone(
        tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        support = ScriptedModel(lambda r: ModelResponse(text="support here"))
        billing = ScriptedModel(lambda r: ModelResponse(text="billing here"))
        team = Team([Agent(name="support", conversation_history=store, provider=support),
                     Agent(name="billing", conversation_history=store, provider=billing)])
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        thread = "slack:T1:C1:100.1"
        await team.until_answered(say("@support my card was charged twice", who=ANN,
                                      conversation_id=thread, thread_id="100.1",
                                      reply_to_message_id="100.1"), channel)
        await team.until_answered(say("@billing can you refund the second charge?", who=ANN,
                                      conversation_id=thread, thread_id="100.1",
                                      reply_to_message_id="100.1"), channel)
        await team.stop()

    assert [agent for _, _, agent in channel.sent] == ["support", "billing"]
    assert len(support.requests) == 1
    last_turn = billing.requests[-1].messages[-1]
    assert last_turn.role == "user"
    assert last_turn.content.endswith("@billing can you refund the second charge?")
