"""Two agents share one Telegram bot: a reply to an agent's message reaches that agent.

The reply is posted before its turn is stored, so the stored turn carries Telegram's message
id; after a restart (a new team, nothing in memory) a reply to that message still reaches the
agent that wrote it, not the bot's default agent.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.telegram import ALICE, GROUP, FakeTelegram
from threadline.agents import Agent, OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel
from threadline.team import Team


async def run_team(url: str, fake: FakeTelegram, update: dict[str, object], posts: int) -> None:
    async with SqlConversationStore(url) as store:
        agents = [Agent(name=n, conversation_history=store, provider=OfflineModel())
                  for n in ("support", "billing")]
        team = Team(agents)
        channel = TelegramChannel(name="tg", **fake.channel_settings())
        team.attach(channel)
        await team.start()
        try:
            await fake.deliver(update)
            await fake.wait_for_calls("sendMessage", posts)
        finally:
            await team.stop()


async def test_a_reply_to_an_agent_reaches_it_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'team.db'}"
    async with FakeTelegram() as fake:
        await run_team(url, fake, fake.message(GROUP, ALICE, "@billing was I charged twice?"), 1)
        billing_reply = fake.sent[-1]
        await run_team(url, fake, fake.message(GROUP, ALICE, "thanks, and the refund?",
                                               reply_to=billing_reply), 2)
        async with SqlConversationStore(url) as store:
            turns = await store.get(f"telegram:{GROUP.id}")
        assert [m.participant.id for m in turns] == [
            str(ALICE.id), "billing", str(ALICE.id), "billing"]
        assert turns[1].metadata.message_id == str(billing_reply["message_id"])
