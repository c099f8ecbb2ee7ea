"""What a process finds when it starts after a crash: open turns are answered, once.

The crash is reproduced in the database a dead process leaves behind (the inbox rows and reply
ledger entries it wrote), then a new team starts on it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.history.inbox import DeliveryState, TurnState
from threadline.reply_delivery import streaming_claim
from threadline.team import Team
from threadline.turn import reply_turn_id


async def answered_all(store: SqlConversationStore) -> None:
    async with asyncio.timeout(10):
        while await store.inbox.conversations_waiting():  # noqa: ASYNC110 - polls a database
            await asyncio.sleep(0.02)


async def restart(store: SqlConversationStore, model: ScriptedModel | None = None
                  ) -> tuple[ScriptedModel, RecordingChannel, list[dict[str, Any]]]:
    """A new process on what the dead one left: it answers everything open, then stops."""
    model = model or ScriptedModel()
    team = Team([Agent(name="support", conversation_history=store, provider=model)],
                scan_interval=0.05)
    channel = RecordingChannel()
    team.attach(channel)
    with capture_logs() as logs:
        await team.start()
        await answered_all(store)
    await team.stop()
    return model, channel, logs


async def test_turns_received_before_a_crash_are_answered_in_order_after_it(
        tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 't.db'}"
    async with SqlConversationStore(url) as store:
        first, second = say("@support one", conversation_id="c1"), say(
            "@support two", conversation_id="c1")
        assert await store.inbox.receive(first, channel="room")
        assert await store.inbox.receive(second, channel="room")
        taken = await store.inbox.take_next("c1")  # the dead process was answering it
        assert taken is not None and (taken.turn_id, taken.attempts) == (first.id, 1)
        assert not await store.inbox.receive(first, channel="room")  # a redelivery: not new

        model = ScriptedModel()
        team = Team([Agent(name="support", conversation_history=store, provider=model)],
                    scan_interval=0.05)
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        await answered_all(store)
        await team.stop()
        stored = [m.content for m in await store.get("c1")]
    assert stored == ["@support one", "re: Ann: @support one", "@support two",
                      "re: Ann: @support two"]
    assert [text for _, text, _ in channel.sent] == stored[1::2]


async def test_a_reply_posted_before_the_crash_is_neither_asked_for_nor_posted_again(
        tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        delivered, uncertain = (say("@support one", conversation_id="c1"),
                                say("@support two", conversation_id="c2"))
        for message in (delivered, uncertain):
            await store.inbox.receive(message, channel="room")
            await store.inbox.take_next(message.conversation_id)
            await store.append(message)
        # c1: posted and recorded as delivered, then the process died before finishing.
        writer = Agent(name="support", provider=ScriptedModel())
        reply = writer._outbound(delivered, "the answer to one", ())
        await store.inbox.start_delivery(reply)
        await store.inbox.finish_delivery(reply.id, ["p1"])
        # c2: claimed for posting, then the process died: posted or not, nobody knows.
        claimed = writer._outbound(uncertain, "the answer to two", ())
        assert claimed.id == reply_turn_id(uncertain, "support")
        await store.inbox.start_delivery(claimed)

        model, channel, logs = await restart(store)
        one = await store.get("c1")
        two = await store.get("c2")
    # Both replies are in the history (the first with its platform id, the second marked).
    assert [m.content for m in one] == ["@support one", "the answer to one"]
    assert one[1].metadata.message_id == "p1"
    assert [m.content for m in two] == ["@support two", "the answer to two"]
    assert two[1].metadata.extra["delivery"] == "uncertain"
    assert model.requests == [] and channel.sent == []  # nothing asked or posted again
    events = [e["event"] for e in logs]
    assert "pipeline.reply_already_delivered" in events
    assert "pipeline.delivery_uncertain" in events


async def test_a_reply_still_being_streamed_when_the_process_died_is_answered_again(
        tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        asked, finishing = (say("@support one", conversation_id="c1"),
                            say("@support two", conversation_id="c2"))
        writer = Agent(name="support", provider=ScriptedModel())
        for message in (asked, finishing):
            await store.inbox.receive(message, channel="room")
            await store.inbox.take_next(message.conversation_id)
            await store.append(message)
        # c1: its first words were being shown when the process died.
        await store.inbox.start_delivery(
            streaming_claim(writer._outbound(asked, "the answ", ())))
        # c2: it had its whole text and was being finished: it may have been seen whole.
        await store.inbox.start_delivery(
            streaming_claim(writer._outbound(finishing, "the answ", ())))
        await store.inbox.update_delivery(writer._outbound(finishing, "the answer to two", ()))

        model, channel, logs = await restart(store)
        one = await store.get("c1")
        two = await store.get("c2")
        ledger = await store.inbox.delivery(reply_turn_id(asked, "support"))
    assert [m.content for m in one] == ["@support one", "re: Ann: @support one"]
    assert channel.sent == [("c1", "re: Ann: @support one", "support")]
    assert ledger is not None and ledger.state is DeliveryState.DELIVERED
    assert ledger.reply.content == "re: Ann: @support one"
    assert [m.content for m in two] == ["@support two", "the answer to two"]
    assert two[1].metadata.extra["delivery"] == "uncertain"
    assert len(model.requests) == 1  # only the interrupted one was asked again
    assert "pipeline.interrupted_stream" in [e["event"] for e in logs]


async def test_a_turn_that_keeps_failing_is_given_up_and_the_next_one_answered(
        tmp_path: Path) -> None:
    async def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="fine")

    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        poison, next_one = say("@support crash me", conversation_id="c1"), say(
            "@support and me?", conversation_id="c1")
        await store.inbox.receive(poison, channel="room")
        await store.inbox.receive(next_one, channel="room")
        for _ in range(3):  # three processes died answering it
            await store.inbox.take_next(poison.conversation_id)
        _, channel, logs = await restart(store, ScriptedModel(reply))
        rows = await store._call("read", False, lambda conn: conn.rows(
            "SELECT turn_id, state, error FROM threadline_inbox ORDER BY row_id", {}))
    assert [(r[0], r[1]) for r in rows] == [(poison.id, TurnState.GIVEN_UP.value),
                                           (next_one.id, TurnState.ANSWERED.value)]
    assert "not answered after 3 attempts" in rows[0][2]
    assert [text for _, text, _ in channel.sent] == ["fine"]
    assert any(e["event"] == "pipeline.turn_given_up" for e in logs)


async def test_an_edit_that_reached_only_the_inbox_before_a_crash_is_stored_and_answered(
        tmp_path: Path) -> None:
    """The dead process had stored the turn it took; the edit's process wrote the inbox row and
    died before the history: the next process answers and keeps the edited text."""
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        draft = say("@support deploy at 5?", conversation_id="c1")
        await store.inbox.receive(draft, channel="room")
        await store.inbox.take_next(draft.conversation_id)
        await store.append(draft)
        assert await store.inbox.edit_open(draft.id, "@support deploy at 6?") is (
            TurnState.ANSWERING)

        _, channel, logs = await restart(store)
        stored = [m.content for m in await store.get("c1")]
    assert stored == ["@support deploy at 6?", "re: Ann: @support deploy at 6?"]
    assert [text for _, text, _ in channel.sent] == stored[1:]
    assert "pipeline.taken_turn_stored_as_edited" in [e["event"] for e in logs]
