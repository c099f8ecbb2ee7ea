"""`/forget-me` over Telegram: a person erases their words everywhere from the chat, after
confirming; nobody else's words go, and no model is asked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.telegram import ALICE, BOB, GROUP, FakeTelegram, TgUser, private_chat
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

    async def send(self, chat: object, user: TgUser, words: str) -> str:
        """Deliver one message and return the text of the reply the bot posted."""
        before = len(self.telegram.sent)
        await self.telegram.deliver(self.telegram.message(chat, user, words))  # type: ignore[arg-type]
        await self.telegram.wait_for_calls("sendMessage", before + 1)
        return str(self.telegram.sent[before]["text"])

    async def everything_stored(self) -> list[str]:
        conversations = [f"telegram:{GROUP.id}", f"telegram:{ALICE.id}"]
        return [m.content for c in conversations for m in await self.store.get(c)]


@pytest.fixture
async def bot(model: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Bot]:
    async with FakeTelegram() as fake, SqlConversationStore(sqlite_url) as store:
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client()))])
        team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
        await team.start()
        try:
            yield Bot(fake, model, store, team)
        finally:
            await team.stop()


async def test_forget_me_erases_the_sender_everywhere_after_confirming(bot: Bot) -> None:
    bot.model.script(*[text("Noted.")] * 3)
    await bot.send(private_chat(ALICE), ALICE, "my order 7781 never arrived")
    await bot.send(GROUP, ALICE, "@support_bot my card ends in 4242, order 7781")
    await bot.send(GROUP, BOB, "@support_bot my order 5150 is late too")
    assert "forget_me" in [c["command"] for c in bot.telegram.my_commands]

    unconfirmed = await bot.send(GROUP, ALICE, "/forget_me confirm")
    question = await bot.send(private_chat(ALICE), ALICE, "/forget_me")
    kept = await bot.everything_stored()
    assert any("7781" in words for words in kept)  # asking erases nothing
    done = await bot.send(private_chat(ALICE), ALICE, "/forget_me confirm")

    assert unconfirmed.startswith("Nothing to confirm")
    assert "/forget-me confirm" in question and "cannot be undone" in question
    # her two messages, her three commands (this one too) and the four answers to them
    assert done.startswith("Done: erased 5 of your messages and 4 replies to them")
    assert len(bot.model.requests) == 3  # the three questions; no command reached the model
    await bot.team.stop()
    kept = await bot.everything_stored()
    assert not any("7781" in words or "4242" in words for words in kept)
    assert any("5150" in words for words in kept)  # Bob's words stay
    assert not await bot.store.search(f"telegram:{GROUP.id}", "7781")
    assert await bot.store.search(f"telegram:{GROUP.id}", "5150")
