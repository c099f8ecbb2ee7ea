"""An edit of a message already answered is stored; it is answered again only when the team is
set to (`answer_edits`, off by default: `history.answer_edits` in the config)."""

from __future__ import annotations

import asyncio

import pytest

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team


@pytest.mark.parametrize("answer_edits", [False, True])
async def test_an_answered_turn_edited_is_stored_and_answered_again_only_when_set(
        sqlite_url: str, answer_edits: bool) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        agent = Agent(name="support", conversation_history=store, provider=ScriptedModel())
        team = Team([agent], respond_to_all=True, answer_edits=answer_edits)
        channel = RecordingChannel()
        team.attach(channel, respond_to_all=True)
        await team.start()
        try:
            asked = say("deploy at 5?")
            await team.until_answered(asked, channel)
            await team.on_edit(asked.conversation_id, asked.id, "deploy at 6?")
            if answer_edits:
                async with asyncio.timeout(10):
                    while len(channel.sent) < 2:  # noqa: ASYNC110 (answered in the background)
                        await asyncio.sleep(0.02)
        finally:
            await team.stop()
        turns = await store.get(asked.conversation_id)

    posted = [text for _, text, _ in channel.sent]
    assert posted[0].endswith("deploy at 5?")
    said = [(m.participant.kind, m.content) for m in turns]
    assert said[:2] == [("user", "deploy at 6?"), ("agent", posted[0])]
    if answer_edits:
        assert len(posted) == 2 and posted[1].endswith("deploy at 6?")
        assert said[2:] == [("agent", posted[1])]
        assert turns[2].id != turns[1].id
    else:
        assert len(posted) == 1
        assert said[2:] == []
