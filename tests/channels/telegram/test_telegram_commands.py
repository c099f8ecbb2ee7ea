"""Telegram commands: the menu is set at start, and /forget, /summary, /agents are answered by
the pipeline (never by the model), in a private chat and in a group (`/command@bot`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.fakes.telegram import ALICE, GROUP, FakeTelegram, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel
from threadline.team import Team

model = fake_anthropic_fixture()


@dataclass
class Bot:
    telegram: FakeTelegram
    model: FakeAnthropic
    store: SqlConversationStore
    team: Team
    stopped: bool = False

    async def stop(self) -> None:
        """Stop the team: every turn answered so far is recorded once this returns."""
        if not self.stopped:
            self.stopped = True
            await self.team.stop()

    async def send(self, chat: object, text: str) -> str:
        """Deliver one message and return the text of the reply the bot posted."""
        before = len(self.telegram.sent)
        await self.telegram.deliver(self.telegram.message(chat, ALICE, text))  # type: ignore[arg-type]
        await self.telegram.wait_for_calls("sendMessage", before + 1)
        return str(self.telegram.sent[before]["text"])


@pytest.fixture
async def bot(fake: FakeTelegram, model: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Bot]:
    async with SqlConversationStore(sqlite_url) as store:
        team = Team([Agent(name="support", description="Answers order questions",
                           conversation_history=store, provider=AnthropicProvider(model.client()))])
        team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
        await team.start()
        running = Bot(fake, model, store, team)
        try:
            yield running
        finally:
            await running.stop()


async def test_the_command_menu_is_set_at_start(bot: Bot) -> None:
    assert [c["command"] for c in bot.telegram.my_commands] == [
        "forget", "summary", "agents", "forget_me", "unlink"]
    assert all(c["description"] for c in bot.telegram.my_commands)


async def test_commands_in_a_group_with_no_history(bot: Bot) -> None:
    summary = await bot.send(GROUP, "/summary@support_bot")
    agents = await bot.send(GROUP, "/agents")
    forget = await bot.send(GROUP, "/forget@support_bot")

    assert summary.startswith("support has no summary of this conversation yet")
    assert "support: Answers order questions" in agents and "@support_bot" in agents
    assert forget.startswith("Nothing to forget")
    replies = bot.telegram.calls_to("sendMessage")
    assert all(c.params["reply_parameters"]["message_id"] for c in replies)
    assert bot.model.requests == []
    await bot.stop()
    stored = await bot.store.get(f"telegram:{GROUP.id}")
    assert [(m.participant.kind, m.metadata.extra.get("command")) for m in stored] == [
        ("user", "summary"), ("agent", "summary"), ("user", "agents"), ("agent", "agents"),
        ("user", "forget"), ("agent", "forget")]


async def test_forget_in_a_private_chat_is_confirmed_then_honoured(bot: Bot) -> None:
    chat = private_chat(ALICE)
    await bot.send(chat, "my order 7781 never arrived")
    question = await bot.send(chat, "/forget")
    done = await bot.send(chat, "/forget confirm")
    await bot.send(chat, "what was my order number?")

    assert "/forget confirm" in question and done.startswith("Done: support forgot")
    assert len(bot.model.requests) == 2
    first, last = (json.dumps(body["messages"]) for body in bot.model.bodies)
    assert "7781" in first and "7781" not in last and "/forget" not in last


async def test_a_command_for_another_bot_is_not_answered(bot: Bot) -> None:
    await bot.telegram.deliver(bot.telegram.message(GROUP, ALICE, "/agents@other_bot"))
    await bot.send(GROUP, "/agents")  # the next reply is to this one, not to the first

    [reply] = bot.telegram.calls_to("sendMessage")
    assert reply.params["text"].startswith("Agents here:")
    await bot.stop()
    stored = await bot.store.get(f"telegram:{GROUP.id}")
    assert [m.is_command for m in stored] == [False, True, True]


async def test_forget_is_confirmed_with_the_button_under_the_question(bot: Bot) -> None:
    await bot.send(GROUP, "@support_bot my order 7781 never arrived")
    await bot.send(GROUP, "/forget")
    question = bot.telegram.sent[-1]
    before = len(bot.telegram.sent)
    await bot.telegram.deliver(bot.telegram.press(question, "Forget", user=ALICE))
    await bot.telegram.wait_for_calls("sendMessage", before + 1)
    await bot.telegram.wait_for_calls("answerCallbackQuery", 1)
    await bot.stop()

    assert question["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "/forget confirm"
    assert str(bot.telegram.sent[-1]["text"]).startswith("Done: support forgot")
    stored = await bot.store.get(f"telegram:{GROUP.id}")
    assert [(m.content.split()[0], m.is_command) for m in stored][-2:] == [
        ("/forget", True), ("Done:", True)]
    assert len(bot.model.requests) == 1
