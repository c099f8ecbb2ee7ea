"""An agent on an OpenAI-compatible server and one on Anthropic share one conversation."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic import text as anthropic_text
from tests.fakes.openai import FakeOpenAI
from tests.fakes.openai import text as openai_text
from tests.interceptors.scripted import ANN, say
from threadline.agents.agent import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.openai_provider import OpenAIProvider
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team


async def test_each_agent_sees_what_the_other_said_in_the_shared_history(tmp_path: Path) -> None:
    async with FakeAnthropic() as anthropic, FakeOpenAI() as openai, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        anthropic.script(anthropic_text("Your Pro plan renews on 3 June."),
                         anthropic_text("Yes, the local model summed it up correctly."))
        openai.script(openai_text("Summary: Ann is on Pro; it renews on 3 June."))
        support = Agent(name="support", model="claude-test", conversation_history=store,
                        provider=AnthropicProvider(anthropic.client()))
        notes = Agent(name="notes", model="llama-test", conversation_history=store,
                      provider=OpenAIProvider(openai.client()))
        team = Team([support, notes])
        try:
            await team.handle(say("@support when does my Pro plan renew?", who=ANN))
            await team.handle(say("@notes sum up what support told me", who=ANN))
            await team.handle(say("@support did notes get it right?", who=ANN))
        finally:
            await team.stop()
            for agent in (support, notes):
                await agent.close()

        stored = await store.get("local:room")
        assert [(m.participant.id, m.content) for m in stored] == [
            ("U_ANN", "@support when does my Pro plan renew?"),
            ("support", "Your Pro plan renews on 3 June."),
            ("U_ANN", "@notes sum up what support told me"),
            ("notes", "Summary: Ann is on Pro; it renews on 3 June."),
            ("U_ANN", "@support did notes get it right?"),
            ("support", "Yes, the local model summed it up correctly."),
        ]
        # What crossed the wire: the OpenAI request carried the Anthropic agent's reply ...
        [openai_body] = openai.bodies
        sent = "\n".join(str(m["content"]) for m in openai_body["messages"])
        assert "Your Pro plan renews on 3 June." in sent
        assert openai_body["model"] == "llama-test"
        # ... and Anthropic's second request carried the OpenAI agent's reply.
        second = anthropic.bodies[1]
        blocks = [b.get("text", "") for m in second["messages"] for b in m["content"]]
        assert any("Summary: Ann is on Pro" in b for b in blocks)
