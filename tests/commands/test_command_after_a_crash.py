"""A command taken again after a crash is not answered twice: the reply ledger says its answer
was already posted (or may have been), as for an agent's reply."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.agents.test_turn_pipeline_recovery import answered_all
from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team


async def restart(store: SqlConversationStore, model: ScriptedModel,
                  channel: RecordingChannel) -> None:
    """A new process on the dead one's database: it answers what was left, then stops."""
    team = Team([Agent(name="support", conversation_history=store, provider=model)],
                scan_interval=0.05)
    team.attach(channel)
    await team.start()
    await answered_all(store)
    await team.stop()


async def test_a_command_answer_claimed_before_the_crash_is_not_posted_again(
        tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        command = say("/agents", conversation_id="c1")
        await store.inbox.receive(command, channel="room")
        await store.inbox.take_next(command.conversation_id)  # the dead process was answering it
        answer = Agent(name="support", provider=ScriptedModel()).reply_turn(
            command, "Agents here: support")
        claimed = replace(answer, metadata=replace(answer.metadata, extra={"command": "agents"}))
        await store.inbox.start_delivery(claimed)  # ... and died around posting the answer

        model, channel = ScriptedModel(), RecordingChannel()
        await restart(store, model, channel)
        stored = await store.get("c1")

    assert channel.sent == [] and model.requests == []
    assert [(m.content, m.is_command) for m in stored] == [
        ("/agents", True), ("Agents here: support", True)]
    assert stored[1].metadata.extra["delivery"] == "uncertain"
