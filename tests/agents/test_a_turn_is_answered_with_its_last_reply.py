"""A turn is marked answered only after every reply and hand-off of it, in the same write as
its last reply when nothing follows that reply; a stage that acts after the answer keeps the
turn open until it is done. On every store.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.history.inbox import DeliveryState, TurnInbox
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.stages import Next, Turn
from threadline.team import Team
from threadline.turn import AgentResult, reply_turn_id


class Watching(RecordingChannel):
    """Notes, as each reply is posted, the turns of its conversation still to answer."""

    def __init__(self) -> None:
        super().__init__()
        self.inbox: TurnInbox | None = None
        self.open_at_post: list[list[str]] = []

    async def send_reply(self, inbound: StoredMessage, text: str, *,
                         agent_name: str | None = None) -> list[str]:
        assert self.inbox is not None
        self.open_at_post.append(
            [t.turn_id for t in await self.inbox.open_turns(inbound.conversation_id)])
        return await super().send_reply(inbound, text, agent_name=agent_name)


class AfterTheAnswer:
    """A stage that looks at the inbox once the answer returned (as `ambient` may speak then):
    it does not say `acts_after_answer = False`."""

    def __init__(self) -> None:
        self.open_after: list[list[str]] = []

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        results = await call_next(turn)
        self.open_after.append([t.turn_id for t in await turn.actions.inbox.open_turns(
            turn.message.conversation_id)])
        return results


class PassingThrough(AfterTheAnswer):
    acts_after_answer = False  # it only reads


def team_of(store: ConversationStore, channel: Watching, *, stages: dict[str, object]
            ) -> Team:
    support = Agent(name="support", conversation_history=store, provider=ScriptedModel(
        lambda r: ModelResponse(text="@billing over to you")))
    billing = Agent(name="billing", conversation_history=store, provider=ScriptedModel(
        lambda r: ModelResponse(text="refunded")))
    team = Team([support, billing], stages=stages)  # type: ignore[arg-type]
    channel.inbox = team.pipeline.inbox
    team.attach(channel)
    return team


async def replies_delivered(inbox: TurnInbox, ids: Sequence[str]) -> list[DeliveryState]:
    found = [await inbox.delivery(i) for i in ids]
    return [d.state for d in found if d is not None]


async def test_a_handed_off_turn_stays_open_until_its_last_reply(
        store: ConversationStore) -> None:
    channel = Watching()
    watcher = PassingThrough()
    team = team_of(store, channel, stages={"watcher": watcher})
    await team.start()
    turn = say("@support I was charged twice", conversation_id="c1")
    results = await team.handle(turn, channel)
    await team.stop()

    assert [r.agent_name for r in results] == ["support", "billing"]
    # Both replies were posted while the person's turn was still to answer.
    assert channel.open_at_post == [[turn.id], [turn.id]]
    # Nothing acts after the answer: the last reply's write marked it answered.
    assert watcher.open_after == [[]]
    inbox = team.pipeline.inbox
    assert await inbox.open_turns("c1") == []
    handed = [r.outbound for r in results if r.outbound is not None]
    assert await replies_delivered(inbox, [m.id for m in handed]) == [
        DeliveryState.DELIVERED] * 2
    assert [m.content for m in await store.get("c1")] == [
        turn.content, "@billing over to you", "refunded"]


async def test_a_stage_acting_after_the_answer_finds_the_turn_still_open(
        store: ConversationStore) -> None:
    channel = Watching()
    watcher = AfterTheAnswer()
    team = team_of(store, channel, stages={"watcher": watcher})
    await team.start()
    turn = say("@billing refund please", conversation_id="c2")
    results = await team.handle(turn, channel)
    await team.stop()

    assert [r.output for r in results] == ["refunded"]
    assert watcher.open_after == [[turn.id]]  # answered once the walk was done
    inbox = team.pipeline.inbox
    assert await inbox.open_turns("c2") == []
    reply = reply_turn_id(turn, "billing")
    assert await replies_delivered(inbox, [reply]) == [DeliveryState.DELIVERED]
