"""Alice's Slack and Telegram accounts: strangers until she links them with a one-time code.

One team serves a Slack DM (slack-bolt/slack_sdk against the fake Slack) and a Telegram DM
(python-telegram-bot against the fake Bot API), the model behind the real Anthropic SDK against
the fake API. A fact Alice told on Slack is not in what the model receives for her Telegram
question while the accounts are unlinked. "link my account" on Slack gives a code; the code
said on Telegram links them, and neither message reaches the model. Then the same question on
Telegram reaches the model with the fact, marked as said in a Slack DM.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import ALICE, FakeTelegram, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.parts import people_for
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.channels.telegram import TelegramChannel
from threadline.history.assembler import AssemblerOptions
from threadline.people.link_codes import LINK_CODE, LinkCodeInterceptor
from threadline.team import Team

FACT = "5531"


def _answer(body: dict[str, Any]) -> Reply:
    return text("Noted.")


async def test_a_fact_told_on_slack_is_found_on_telegram_once_linked(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'people.db'}"
    async with (FakeSlack() as slack, FakeTelegram() as telegram, FakeAnthropic() as model,
                SqlConversationStore(url) as store):
        model.responder = _answer
        slack.add_user("U0ALICE", display_name="Alice")
        support = Agent(name="support", conversation_history=store,
                        provider=AnthropicProvider(model.client(), stream=False),
                        interceptors=[LinkCodeInterceptor()],
                        assembler_options=AssemblerOptions(person_memory=True))
        team = Team([support])
        slack_channel = SlackChannel(**slack.channel_settings())
        telegram_channel = TelegramChannel(name="tg", **telegram.channel_settings())
        team.attach(slack_channel)
        team.attach(telegram_channel)
        await team.start()
        dm = private_chat(ALICE)
        try:
            async def on_slack(words: str, replies: int) -> str:
                await slack.deliver_event(slack_channel.events_url, slack.message_event(
                    words, channel="D0ALICE", channel_type="im"))
                return str((await slack.wait_for_calls("chat.postMessage", replies))[-1]
                           .params["text"])

            async def on_telegram(words: str, replies: int) -> str:
                await telegram.deliver(telegram.message(dm, ALICE, words))
                return str((await telegram.wait_for_calls("sendMessage", replies))[-1]
                           .params["text"])

            await on_slack(f"for the record, my locker code is {FACT}", 1)
            await on_telegram("what is my locker code?", 1)
            assert len(model.requests) == 2
            assert FACT not in json.dumps(model.requests[-1].body)

            offered = await on_slack("link my account", 2)
            found = re.search(r"TL-\w{4}-\w{4}", offered)
            assert found is not None and LINK_CODE.match(found.group()), offered
            assert "Linked" in await on_telegram(found.group(), 2)
            assert len(model.requests) == 2  # neither the request nor the code reached it
            assert "unknown, used or expired" in await on_telegram(found.group(), 3)

            await on_telegram("what is my locker code?", 4)
            assert len(model.requests) == 3
            request = json.dumps(model.requests[-1].body)
            assert FACT in request and "a direct message on slack" in request
        finally:
            await team.stop()
        person = await people_for(store).person_of("telegram:1001")
        assert person is not None
        assert person.identities == ("slack:T0FAKE:U0ALICE", "telegram:1001")
