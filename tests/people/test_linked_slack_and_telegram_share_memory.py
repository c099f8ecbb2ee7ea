"""Alice's Slack and Telegram accounts: strangers until she links them, and only with her yes.

One team serves a Slack DM (slack-bolt/slack_sdk against the fake Slack) and Telegram DMs
(python-telegram-bot against the fake Bot API), the model behind the real Anthropic SDK against
the fake API. "link my account" on Slack gives Alice a code. Mallory, on Telegram, says her
code and presses Link there: nothing is linked; Alice is asked in her Slack DM with Link and
Refuse buttons and refuses. Her own Telegram account says a new code and presses Link, she
presses Link on Slack, and both accounts are told. Then a fact told on Slack is found for her
Telegram question. No command reaches the model, and no row of the database ever holds a live
code.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import ALICE, FakeTelegram, TgUser, private_chat
from threadline.agents import Agent
from threadline.agents.agent import Memory
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.parts import people_for
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.channels.telegram import TelegramChannel
from threadline.history.assembler import AssemblerOptions
from threadline.people.link_codes import link_command
from threadline.team import Team, default_commands

FACT = "5531"
MALLORY = TgUser(1666, "Mallory")
CODE = re.compile(r"TL-[A-Z0-9]{4}-[A-Z0-9]{4}")


def _answer(body: dict[str, Any]) -> Reply:
    return text("Noted.")


def rows_holding(database: Path, needle: str) -> list[str]:
    """Every table whose rows hold `needle` anywhere (read with the stdlib driver)."""
    found = []
    with sqlite3.connect(database) as db:
        # Every stored table (an FTS5 index is read through its own shadow tables).
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = "
                                           "'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                if any(needle in str(value) for value in row):
                    found.append(table)
    return found


async def test_a_code_links_only_when_its_owner_agrees_and_both_are_told(
        tmp_path: Path) -> None:
    database = tmp_path / "people.db"
    async with (FakeSlack() as slack, FakeTelegram() as telegram, FakeAnthropic() as model,
                SqlConversationStore(f"sqlite:///{database}") as store):
        model.responder = _answer
        slack.add_user("U0ALICE", display_name="Alice")
        support = Agent(name="support", conversation_history=store,
                        provider=AnthropicProvider(model.client(), stream=False),
                        memory=Memory(options=AssemblerOptions(person_memory=True)))
        commands = default_commands()
        commands.register(link_command(minutes=10))
        team = Team([support], commands=commands)
        slack_channel = SlackChannel(**slack.channel_settings())
        telegram_channel = TelegramChannel(name="tg", **telegram.channel_settings())
        team.attach(slack_channel)
        team.attach(telegram_channel)
        await team.start()
        people = people_for(store)
        try:
            async def on_slack(words: str, posts: int) -> dict[str, Any]:
                await slack.deliver_event(slack_channel.events_url, slack.message_event(
                    words, channel="D0ALICE", channel_type="im"))
                return (await slack.wait_for_calls("chat.postMessage", posts))[-1].params

            async def on_telegram(who: TgUser, words: str, sent: int) -> str:
                await telegram.deliver(telegram.message(private_chat(who), who, words))
                return str((await telegram.wait_for_calls("sendMessage", sent))[-1]
                           .params["text"])

            async def press_on_telegram(who: TgUser, label: str, sent: int) -> str:
                [question] = [m for m in telegram.sent if "reply_markup" in m
                              and m["chat"]["id"] == who.id][-1:]
                await telegram.deliver(telegram.press(question, label, user=who))
                return str((await telegram.wait_for_calls("sendMessage", sent))[-1]
                           .params["text"])

            async def press_on_slack(question: dict[str, Any], label: str) -> str:
                blocks = question["blocks"]
                blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
                await slack.deliver_action(slack_channel.events_url, slack.block_action(
                    blocks, label, user="U0ALICE", channel="D0ALICE"))
                [(_, answer)] = (await slack.wait_for_responses(len(slack.responses) + 1))[-1:]
                return str(answer.get("text"))

            await on_slack(f"for the record, my locker code is {FACT}", 1)
            await on_telegram(ALICE, "what is my locker code?", 1)
            assert len(model.requests) == 2 and FACT not in json.dumps(model.requests[-1].body)

            # Mallory got hold of Alice's code: Alice is asked, refuses, nothing is linked.
            offered = str((await on_slack("link my account", 2))["text"])
            code = CODE.search(offered)
            assert code is not None, offered
            own_question = await on_telegram(MALLORY, code.group(), 2)
            assert "slack:T0FAKE:U0ALICE" in own_question and "Refuse" in own_question
            waiting = await press_on_telegram(MALLORY, "Link", 3)
            assert "asked the account that gave this code" in waiting
            question = await slack.wait_for_calls("chat.postMessage", 3)
            asked = question[-1].params
            assert "telegram:1666" in str(asked["text"]) and "Refuse" in json.dumps(
                asked["blocks"])
            assert await people.person_of("telegram:1666") is None
            assert await people.person_of("slack:T0FAKE:U0ALICE") is None
            assert rows_holding(database, code.group()) == []
            assert "Refused" in await press_on_slack(asked, "Refuse")
            told = await telegram.wait_for_calls("sendMessage", 4)
            assert "declined" in str(told[-1].params["text"])
            assert await people.person_of("telegram:1666") is None
            assert "unknown, used or expired" in await on_telegram(MALLORY, code.group(), 5)

            # Alice's own Telegram account: asked on Slack, she agrees; both are told.
            offered = str((await on_slack("link my account", 4))["text"])
            code = CODE.search(offered)
            assert code is not None
            await on_telegram(ALICE, code.group(), 6)
            await press_on_telegram(ALICE, "Link", 7)
            asked = (await slack.wait_for_calls("chat.postMessage", 5))[-1].params
            assert "telegram:1001" in str(asked["text"])
            assert rows_holding(database, code.group()) == []
            assert "Linked" in await press_on_slack(asked, "Link")
            told = await telegram.wait_for_calls("sendMessage", 8)
            assert "Linked" in str(told[-1].params["text"])
            assert len(model.requests) == 2  # no link step reached the model

            await on_telegram(ALICE, "what is my locker code?", 9)
            assert len(model.requests) == 3
            request = json.dumps(model.requests[-1].body)
            assert FACT in request and "a direct message on slack" in request
        finally:
            await team.stop()
        person = await people.person_of("telegram:1001")
        assert person is not None
        assert person.identities == ("slack:T0FAKE:U0ALICE", "telegram:1001")
        assert await people.person_of("telegram:1666") is None
