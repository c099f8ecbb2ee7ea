"""Discord application commands: registered at start, deferred, answered by the pipeline as
the interaction's follow-up (never by the model), in a server channel and in a DM."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.discord import DiscordChannel
from threadline.team import Team

model = fake_anthropic_fixture()


@dataclass
class Bot:
    discord: FakeDiscord
    world: DiscordWorld
    store: SqlConversationStore
    team: Team

    async def command(self, channel_id: str, name: str, text: str | None = None) -> str:
        """Run an application command as Ada; the text of the follow-up that answers it."""
        before = len(self.discord.followups)
        await self.discord.deliver_command(channel_id, user=self.world.ada, name=name, text=text)
        followups = await self.discord.wait_for_followups(before + 1)
        return str(followups[before]["content"])


@pytest.fixture
async def bot(sqlite_url: str, model: FakeAnthropic) -> AsyncIterator[Bot]:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client()))])
        team.attach(DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                   gateway_url=fake.gateway_url, guild_ready_timeout=0.02))
        await team.start()
        try:
            yield Bot(fake, world, store, team)
        finally:
            await team.stop()


async def test_the_commands_are_registered_at_start(bot: Bot) -> None:
    registered = {c["name"]: c for c in bot.discord.app_commands}
    assert sorted(registered) == ["agents", "forget", "forget-me", "summary", "unlink"]
    assert [o["name"] for o in registered["forget"]["options"]] == ["text"]
    assert [o["name"] for o in registered["forget-me"]["options"]] == ["text"]
    assert not registered["agents"].get("options")


async def test_each_command_in_a_server_channel_with_no_history(
    bot: Bot, model: FakeAnthropic,
) -> None:
    agents = await bot.command(bot.world.general, "agents")
    summary = await bot.command(bot.world.general, "summary")
    forget = await bot.command(bot.world.general, "forget")
    await bot.team.stop()

    assert agents.startswith("Agents here:") and "@threadline" in agents
    assert summary.startswith("support has no summary of this conversation yet")
    assert forget.startswith("Nothing to forget")
    assert [c["type"] for c in bot.discord.interaction_callbacks] == [5, 5, 5]  # deferred
    assert all(f["flags"] & 64 for f in bot.discord.followups)  # seen by the sender only
    assert bot.discord.posts == [] and model.requests == []
    stored = await bot.store.get(f"discord:{bot.world.guild.id}:{bot.world.general}")
    assert [(m.participant.id, m.content.split()[0]) for m in stored] == [
        (bot.world.ada.id, "/agents"), ("support", "Agents"),
        (bot.world.ada.id, "/summary"), ("support", "support"),
        (bot.world.ada.id, "/forget"), ("support", "Nothing")]
    assert all(m.is_command for m in stored)


async def test_forget_in_a_dm_is_confirmed_then_honoured(bot: Bot, model: FakeAnthropic) -> None:
    dm = bot.discord.add_dm(bot.world.ada)
    await bot.discord.deliver_message(dm, author=bot.world.ada,
                                      content="my order 7781 never arrived")
    await bot.discord.wait_for_posts(1)
    question = await bot.command(dm, "forget")
    done = await bot.command(dm, "forget", "confirm")
    await bot.discord.deliver_message(dm, author=bot.world.ada, content="what was my order?")
    await bot.discord.wait_for_posts(2)

    assert "/forget confirm" in question and done.startswith("Done: support forgot")
    first, last = (json.dumps(body["messages"]) for body in model.bodies)
    assert "7781" in first and "7781" not in last and "/forget" not in last


async def test_forget_is_confirmed_with_the_button_under_the_question(
    bot: Bot, model: FakeAnthropic,
) -> None:
    await bot.discord.deliver_message(bot.world.general, author=bot.world.ada,
                                      content=f"<@{bot.discord.bot.id}> my order 7781 is late")
    await bot.discord.wait_for_posts(1)
    await bot.command(bot.world.general, "forget")
    question = bot.discord.followup_messages[-1]
    await bot.discord.press_button(question, "Forget", user=bot.world.ada)
    [*_, done] = await bot.discord.wait_for_followups(2)
    await bot.team.stop()

    assert done["content"].startswith("Done: support forgot")
    assert [c["type"] for c in bot.discord.interaction_callbacks] == [5, 5]
    stored = await bot.store.get(f"discord:{bot.world.guild.id}:{bot.world.general}")
    assert [(m.content.split()[0], m.is_command) for m in stored][-2:] == [
        ("/forget", True), ("Done:", True)]
    assert len(model.requests) == 1
