"""`threadline run` against fake platforms and a fake Anthropic API, stopped by SIGTERM mid-turn.

Three people write at once, in three conversations; while all three model calls are still being
answered the process gets SIGTERM. It must finish those turns: every inbound message and every
reply is in the store, every reply reached the platform, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import THREADLINE
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.discord_gateway import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import FakeTelegram, TgUser, private_chat
from threadline.history.sql_store import SqlConversationStore

PEOPLE = 3


@dataclass
class Platform:
    """One fake platform: the channel's config, its secrets, and how to talk to it."""

    channel_yaml: str
    env: dict[str, str]
    fake: Any
    extra: dict[str, Any] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def platform(name: str) -> AsyncIterator[Platform]:
    if name == "telegram":
        async with FakeTelegram() as telegram:
            yield Platform(f"""\
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
    base_file_url: {telegram.file_url}
""", {"TELEGRAM_BOT_TOKEN": telegram.token}, telegram)
    elif name == "slack":
        async with FakeSlack() as slack:
            port = free_port()
            yield Platform(f"""\
    type: slack
    mode: http
    bot_token: ${{SLACK_BOT_TOKEN}}
    signing_secret: ${{SLACK_SIGNING_SECRET}}
    api_base_url: {slack.url}
    host: 127.0.0.1
    port: {port}
""", {"SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret},
                slack, {"events_url": f"http://127.0.0.1:{port}/slack/events"})
    else:
        async with FakeDiscord() as discord:
            guild = discord.add_guild(name="Shop")
            channels = [discord.add_text_channel(guild, name=f"room{n}") for n in range(PEOPLE)]
            yield Platform(f"""\
    type: discord
    token: ${{DISCORD_BOT_TOKEN}}
    api_base_url: {discord.api_base_url}
    gateway_url: {discord.gateway_url}
""", {"DISCORD_BOT_TOKEN": discord.token}, discord, {"channels": channels, "guild": guild})


async def say(name: str, where: Platform, person: int, words: str) -> None:
    if name == "telegram":
        user = TgUser(2001 + person, f"Person{person}", username=f"person{person}")
        await where.fake.deliver(where.fake.message(private_chat(user), user, words))
    elif name == "slack":
        slack: FakeSlack = where.fake
        parent = slack.next_ts()  # each in its own thread: three conversations
        event = slack.message_event(f"<@{slack.bot_user_id}> {words}", thread_ts=parent)
        delivery = await slack.deliver_event(where.extra["events_url"], event)
        assert delivery.status == 200
    else:
        discord: FakeDiscord = where.fake
        author = discord.add_user(f"person{person}")
        discord.add_member(where.extra["guild"], author)
        await discord.deliver_message(where.extra["channels"][person], author=author,
                                      content=f"<@{discord.bot.id}> {words}")


def replies_sent(name: str, where: Platform) -> list[str]:
    if name == "telegram":
        return [c.params["text"] for c in where.fake.calls_to("sendMessage")]
    if name == "slack":
        return [c.params["text"] for c in where.fake.calls_to("chat.postMessage")]
    return [post["content"] for post in where.fake.posts]


async def wait_for_log(stream: asyncio.StreamReader, event: str) -> None:
    async with asyncio.timeout(60):
        while True:
            line = await stream.readline()
            if not line:
                raise AssertionError(f"threadline exited before logging {event}")
            try:
                if json.loads(line).get("event") == event:
                    return
            except ValueError:
                continue


@pytest.mark.parametrize("name", ["telegram", "slack", "discord"])
async def test_sigterm_mid_conversation_loses_nothing(tmp_path: Path, name: str) -> None:
    db = tmp_path / "threadline.db"
    async with platform(name) as where, FakeAnthropic() as anthropic:
        # Each answer is held back long enough for SIGTERM to arrive while it is pending.
        anthropic.script(*(text(f"answer {n}", delay=1.0) for n in range(PEOPLE)))
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
log:
  format: json
ops:
  port: 0
channels:
  {name}:
{where.channel_yaml}agents:
  support:
    system_prompt: You help.
    channels: [{name}]
""", encoding="utf-8")
        process = await asyncio.create_subprocess_exec(
            str(THREADLINE), "run", str(config), cwd=tmp_path,
            env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
                 # the code under test, when it is not the installed copy
                 "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **where.env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr is not None
        try:
            await wait_for_log(process.stderr, "runtime.started")
            for person in range(PEOPLE):
                await say(name, where, person, f"hello, I am person {person}")
            await anthropic.wait_for_requests(PEOPLE)  # all three turns are in flight
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                _, rest = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, rest.decode()
        assert sorted(replies_sent(name, where)) == [f"answer {n}" for n in range(PEOPLE)]

    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        conversations = await store.list_conversations()
        assert len(conversations) == PEOPLE
        said = []
        for info in conversations:
            turns = await store.get(info.conversation_id)
            assert [t.participant.kind for t in turns] == ["user", "agent"]
            said.append(turns[0].content.split("hello, ")[1])
            assert turns[1].content.startswith("answer ")
        assert sorted(said) == [f"I am person {n}" for n in range(PEOPLE)]
    outbox = tmp_path / "threadline.db.outbox.jsonl"
    assert not outbox.exists() or outbox.stat().st_size == 0
