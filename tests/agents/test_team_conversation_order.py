"""Turns of one conversation run one at a time in arrival order; conversations run together."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.interceptors.scripted import ScriptedModel, last_user_text, say
from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team

CONVERSATIONS = 100
TURNS = 5
OVERLAP = 20  # conversations that must be inside the model at the same moment


async def test_100_conversations_keep_their_order_while_running_concurrently(
    tmp_path: Path,
) -> None:
    in_model: set[str] = set()
    inside_per_conversation: dict[str, int] = {}
    overlap_reached = asyncio.Event()

    async def reply(request: ModelRequest) -> ModelResponse:
        text = last_user_text(request)
        conversation = text.split()[-2]
        inside_per_conversation[conversation] = inside_per_conversation.get(conversation, 0) + 1
        assert inside_per_conversation[conversation] == 1, "two turns of one conversation ran"
        in_model.add(conversation)
        if len(in_model) >= OVERLAP:
            overlap_reached.set()
        if not overlap_reached.is_set():
            async with asyncio.timeout(10):  # fails the test rather than hanging it
                await overlap_reached.wait()
        inside_per_conversation[conversation] -= 1
        return ModelResponse(text=f"answer to {text.split(': ', 1)[-1]}")

    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        agent = Agent(name="support", conversation_history=store, provider=ScriptedModel(reply))
        team = Team([agent])
        arrivals = [say(f"@support c{c} {t}", conversation_id=f"c{c}")
                    for t in range(TURNS) for c in range(CONVERSATIONS)]
        results = await asyncio.gather(*(team.handle(m) for m in arrivals))
        await team.stop()

        assert overlap_reached.is_set()
        assert all(len(r) == 1 for r in results)
        for c in range(CONVERSATIONS):
            stored = [m.content for m in await store.get(f"c{c}")]
            expected = []
            for t in range(TURNS):
                expected += [f"@support c{c} {t}", f"answer to @support c{c} {t}"]
            assert stored == expected
