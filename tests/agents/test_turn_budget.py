"""The loop guard is a budget: agents naming each other cannot fan out past it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team

NAMES = ("alpha", "beta", "gamma")


def names_the_others(me: str) -> ScriptedModel:
    others = " ".join(f"@{n}" for n in NAMES if n != me)
    return ScriptedModel(lambda r: ModelResponse(text=f"{others} what do you think?"))


@pytest.mark.parametrize("budget", [1, 4, 7])
async def test_three_agents_naming_each_other_stay_within_the_budget(
        tmp_path: Path, budget: int) -> None:
    logging.getLogger().setLevel(logging.INFO)
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        models = {name: names_the_others(name) for name in NAMES}
        team = Team([Agent(name=n, conversation_history=store, provider=models[n])
                     for n in NAMES], max_agent_turns=budget, max_hops=10)
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        with capture_logs() as logs:
            for human in range(5):
                await team.until_answered(
                    say(f"@alpha @beta @gamma question {human}", conversation_id="c1"),
                    channel)
        await team.stop()

    calls = sum(len(m.requests) for m in models.values())
    assert calls == 5 * budget  # every human message spends its whole budget, no more
    assert len(channel.sent) == 5 * budget
    assert sum(e["event"] == "pipeline.turn_budget_spent" for e in logs) == 5


async def test_the_depth_limit_still_stops_a_chain_inside_the_budget(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        ping = ScriptedModel(lambda r: ModelResponse(text="@pong yours"))
        pong = ScriptedModel(lambda r: ModelResponse(text="@ping yours"))
        team = Team([Agent(name="ping", conversation_history=store, provider=ping),
                     Agent(name="pong", conversation_history=store, provider=pong)],
                    max_hops=2, max_agent_turns=10)
        with capture_logs() as logs:
            results = await team.handle(say("@ping go", conversation_id="c1"))
        await team.stop()
    assert [r.agent_name for r in results] == ["ping", "pong", "ping"]
    assert [e["event"] for e in logs if e["event"].startswith("pipeline.hop")] == [
        "pipeline.hop_limit"]
