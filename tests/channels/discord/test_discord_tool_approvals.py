"""A tool call approved from Discord: buttons (message components) under the request, who may
press them, and a denial answered in words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.agents.approving import Refunds, approving_team
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.discord import DiscordChannel

model = fake_anthropic_fixture()


@asynccontextmanager
async def asked(sqlite_url: str, model: FakeAnthropic, refunds: Refunds
                ) -> AsyncIterator[tuple[FakeDiscord, DiscordWorld, dict[str, Any]]]:
    """Ada asked for a refund in #general; yields the request as posted, with its buttons."""
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        channel = DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                 gateway_url=fake.gateway_url, guild_ready_timeout=0.02)
        team = approving_team(store, AnthropicProvider(model.client(), stream=False), channel,
                              refunds)
        await team.start()
        try:
            await fake.deliver_message(world.general, author=world.ada,
                                       content=f"<@{fake.bot.id}> please refund order 7")
            await fake.wait_for_posts(1)
            yield fake, world, {**fake.posted[0], "components": fake.posts[0]["components"]}
        finally:
            await team.stop()


async def test_approve_from_discord_runs_the_tool_once_and_answers_in_the_channel(
        sqlite_url: str, model: FakeAnthropic) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("Order 7 is refunded."))
    async with asked(sqlite_url, model, refunds) as (fake, world, request):
        assert "support wants to run refund" in request["content"]
        await fake.press_button(request, "Approve", user=world.bob)
        await fake.press_button(request, "Approve", user=world.ada)
        followups = await fake.wait_for_followups(2)
        await fake.wait_for_posts(2)

    assert refunds.made == ["7"]
    assert fake.posts[1]["content"] == "Order 7 is refunded."
    answers = sorted(str(f["content"]) for f in followups)
    assert answers[0] == "Approved: refund ran."
    assert answers[1].startswith("You may not decide on refund")


async def test_deny_from_discord_is_answered_in_words_and_nothing_runs(
        sqlite_url: str, model: FakeAnthropic) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("I did not refund order 7."))
    async with asked(sqlite_url, model, refunds) as (fake, world, request):
        await fake.press_button(request, "Deny", user=world.ada)
        [answer] = await fake.wait_for_followups(1)
        await fake.wait_for_posts(2)

    assert refunds.made == []
    assert answer["content"] == "Denied: refund was not run."
    assert fake.posts[1]["content"] == "I did not refund order 7."
