"""`/forget` makes one agent forget a shared conversation; the others, and the record, keep it.

Two agents answer through the real Anthropic SDK against the fake Messages API. Commands are
answered by the pipeline (the fake sees no request for them), recorded as turns, and left out
of every later prompt.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from threadline.agents import Agent
from threadline.agents.agent import Memory
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.summarizer import ExtractiveSummarizer
from threadline.backends.sql import SqlConversationStore
from threadline.channels.local import LocalChannel
from threadline.history.assembler import AssemblerOptions
from threadline.team import Team

fake = fake_anthropic_fixture()


@dataclass
class Room:
    store: SqlConversationStore
    team: Team
    channel: LocalChannel
    model: FakeAnthropic

    async def say(self, text: str, user: str = "ada") -> list[str]:
        """The replies posted to this line."""
        before = len(self.channel.sent)
        await self.channel.say(text, user=user)
        return [r.text for r in self.channel.sent[before:]]

    def prompt_text(self, number: int) -> str:
        return json.dumps(self.model.bodies[number]["messages"])


@pytest.fixture
async def room(sqlite_url: str, fake: FakeAnthropic) -> AsyncIterator[Room]:
    async with SqlConversationStore(sqlite_url) as store:
        agents = [Agent(name=name, conversation_history=store,
                        provider=AnthropicProvider(fake.client()))
                  for name in ("support", "billing")]
        team = Team(agents)
        channel = LocalChannel(name="local")
        team.attach(channel)
        await team.start()
        try:
            yield Room(store, team, channel, fake)
        finally:
            await team.stop()


async def test_forget_asks_then_one_agent_forgets_and_the_other_remembers(room: Room) -> None:
    await room.say("@support @billing my order 7781 never arrived")
    assert len(room.model.requests) == 2

    [question] = await room.say("/forget support")
    assert "/forget confirm" in question and "support" in question
    [done] = await room.say("/forget confirm")
    assert done.startswith("Done: support forgot")
    assert len(room.model.requests) == 2  # no command reached the model

    await room.say("@support @billing what was my order number?")
    support_prompt, billing_prompt = room.prompt_text(2), room.prompt_text(3)
    assert "7781" not in support_prompt and "/forget" not in support_prompt
    assert "7781" in billing_prompt and "/forget" not in billing_prompt

    stored = await room.store.get("local:main")
    commands = [(m.participant.id, m.metadata.extra.get("command")) for m in stored
                if m.is_command]
    assert commands == [("ada", "forget"), ("support", "forget"),
                        ("ada", "forget"), ("support", "forget")]
    assert any("7781" in m.content for m in stored)  # the record keeps every turn


async def test_a_confirmation_without_a_question_forgets_nothing(room: Room) -> None:
    await room.say("@support my order 7781 never arrived")
    [answer] = await room.say("/forget confirm")
    assert answer.startswith("Nothing to confirm")

    await room.say("@support and the order number was?")
    assert "7781" in room.prompt_text(1)


async def test_commands_in_a_conversation_with_no_history(room: Room) -> None:
    [forget] = await room.say("/forget")
    [summary] = await room.say("/summary")
    [agents] = await room.say("/agents")

    assert forget.startswith("Nothing to forget")
    assert "support has no summary of this conversation yet" in summary
    assert "billing has no summary" in summary
    assert "- support" in agents and "@billing" in agents and "@local" in agents
    assert room.model.requests == []
    stored = await room.store.get("local:main")
    assert len(stored) == 6 and all(m.is_command for m in stored)


async def test_summary_shows_the_standing_summary_then_that_it_was_forgotten(
    sqlite_url: str, fake: FakeAnthropic,
) -> None:
    async with SqlConversationStore(sqlite_url) as store:
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(fake.client()),
                      memory=Memory(options=AssemblerOptions(rolling_summary_threshold=2,
                                                             addressed_only_mode=False),
                                    summarizer=ExtractiveSummarizer()))
        team = Team([agent])
        channel = LocalChannel(name="local")
        team.attach(channel)
        await team.start()
        room = Room(store, team, channel, fake)
        try:
            for line in ("my order 7781 never arrived", "it was a blue parcel",
                         "I paid 40 euros for it"):
                await room.say(f"@support {line}")
            [summary] = await room.say("/summary")
            await room.say("/forget")
            await room.say("/forget confirm")
            [after] = await room.say("/summary")
        finally:
            await team.stop()

    assert summary.startswith("support's summary:\n") and "7781" in summary
    assert after == ("support was asked to forget this conversation; nothing has been "
                     "summarized since.")
    assert len(fake.requests) == 3
