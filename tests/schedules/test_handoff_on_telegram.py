"""Human handoff through `threadline run` on the Telegram fake: `/human` in a support group
tells the team's group once; the bot stays quiet while Bob answers; after `/bot on` the agent
answers with Bob's reply in its prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.telegram import ALICE, BOB, GROUP, TgChat
from tests.runtime.platforms import platform, write_config
from tests.runtime.test_run_kill9_answers_everything import until
from tests.schedules.test_reminder_through_the_tool import running
from threadline.backends.sql import SqlConversationStore

TEAM = TgChat(-1002000000009, "supergroup", title="Support team")
TEAM_CHAT = TEAM.id


def numbered(body: dict[str, Any]) -> Reply:
    return text(f"bot answer {len(body['messages'])}")


async def settled(db: Path) -> None:
    """Every turn handed over so far has been taken (answered or kept quiet)."""
    async with SqlConversationStore(f"sqlite:///{db}") as store, asyncio.timeout(30):
        while await store.inbox.conversations_waiting():  # noqa: ASYNC110 - the process writes it
            await asyncio.sleep(0.05)


async def test_human_quiets_the_bot_tells_the_team_once_and_bot_on_brings_it_back(
        tmp_path: Path) -> None:
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = numbered
        telegram = where.fake
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        with config.open("a", encoding="utf-8") as file:
            file.write(f"handoff:\n  notify: {{channel: telegram, chat: '{TEAM_CHAT}'}}\n")

        def in_group() -> list[str]:
            return [m["text"] for m in telegram.sent if m["chat"]["id"] == GROUP.id]

        def to_team() -> list[str]:
            return [m["text"] for m in telegram.sent if m["chat"]["id"] == TEAM_CHAT]

        async def said(sender: Any, words: str) -> None:
            await telegram.deliver(telegram.message(GROUP, sender, words))

        async with running(config, where, tmp_path / "run.log"):
            # The bot is in the team's group too (something said there, not to it).
            await telegram.deliver(telegram.message(TEAM, BOB, "morning, team"))
            await said(ALICE, "@support_bot I need a refund for order 55")
            await until(lambda: len(in_group()) == 1)
            await said(ALICE, "/human the bot cannot refund")
            await until(lambda: len(in_group()) == 2 and len(to_team()) == 1)
            assert "A person will answer here" in in_group()[1]
            [notice] = to_team()
            assert "Alice asked for a person in telegram:" in notice
            assert "order 55" in notice and "t.me/c/1000000001/" in notice

            await said(ALICE, "@support_bot hello? anyone?")
            await said(BOB, "Hi Alice, I refunded order 55 to your card.")
            await said(ALICE, "/human")  # again while handed over: nobody is told twice
            await until(lambda: len(in_group()) == 3)
            await settled(tmp_path / "threadline.db")
            assert len(anthropic.requests) == 1 and len(to_team()) == 1

            await said(ALICE, "/bot on")
            await until(lambda: len(in_group()) == 4)
            assert in_group()[3] == "The bot answers here again."
            await said(ALICE, "@support_bot what did Bob do?")
            await until(lambda: len(in_group()) == 5)
        assert len(anthropic.requests) == 2
        assert "I refunded order 55 to your card" in json.dumps(anthropic.bodies[1]["messages"])
