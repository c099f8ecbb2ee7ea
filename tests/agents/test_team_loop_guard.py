"""Agents may hand a conversation to each other, but a ping-pong stops at the hop limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team


def passes_to(other: str) -> ScriptedModel:
    return ScriptedModel(lambda r: ModelResponse(text=f"@{other} over to you"))


@pytest.mark.parametrize("max_hops", [0, 1, 3])
async def test_a_ping_pong_stops_at_the_hop_limit(tmp_path: Path, max_hops: int) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        ping, pong = passes_to("pong"), passes_to("ping")
        team = Team([Agent(name="ping", conversation_history=store, provider=ping),
                     Agent(name="pong", conversation_history=store, provider=pong)],
                    max_hops=max_hops)
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        results = await team.handle(say("@ping start", conversation_id="c1"), channel)
        await team.stop()

        speakers = [r.agent_name for r in results]
        assert speakers == ["ping", "pong", "ping", "pong"][: max_hops + 1]
        assert [agent for _, _, agent in channel.sent] == speakers  # every reply was posted
        stored = await store.get("c1")
        assert [m.participant.id for m in stored] == ["U_ANN", *speakers]
        # Each agent saw the other's message as the turn it answered.
        if max_hops >= 1:
            assert "ping (agent): @pong over to you" in pong.requests[0].messages[-1].content


async def test_a_hand_off_is_answered_in_process_and_not_by_respond_to_all(
    tmp_path: Path,
) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        support = Agent(name="support", conversation_history=store,
                        provider=ScriptedModel(lambda r: ModelResponse(text="done, thanks")))
        observer = Agent(name="observer", conversation_history=store,
                         provider=ScriptedModel(lambda r: ModelResponse(text="noted")))
        team = Team([support, observer], respond_to_all=["observer"])
        results = await team.handle(say("@support help", conversation_id="c1"))
        # The observer answers the human once; the support agent's reply names nobody, so it
        # triggers no one, respond_to_all or not.
        assert [r.agent_name for r in results] == ["support", "observer"]
        await team.stop()
