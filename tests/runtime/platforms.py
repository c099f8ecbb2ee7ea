"""Fake platforms for `threadline run` tests: a channel config, how to speak, what was sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.discord_gateway import FakeDiscord
from tests.fakes.matrix import FakeMatrix
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import FakeTelegram, TgUser, private_chat
from tests.ports import free_port

PEOPLE = 3


@dataclass
class Platform:
    """One fake platform: the channel's config, its secrets, and how to talk to it."""

    channel_yaml: str
    env: dict[str, str]
    fake: Any
    extra: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def platform(name: str, *, streaming: bool = True) -> AsyncIterator[Platform]:
    """The fake platform `name` and its channel config (`streaming: false` when asked)."""
    async with _platform(name) as where:
        if not streaming:
            where.channel_yaml += "    streaming: false\n"
        yield where


@asynccontextmanager
async def _platform(name: str) -> AsyncIterator[Platform]:
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
    elif name == "matrix":
        async with FakeMatrix() as matrix:
            rooms = [matrix.add_room(f"Person{n}", members=[f"@person{n}:fake.test"])
                     for n in range(PEOPLE)]
            yield Platform(f"""\
    type: matrix
    homeserver: {matrix.url}
    access_token: ${{MATRIX_ACCESS_TOKEN}}
    sync_timeout: 2000
""", {"MATRIX_ACCESS_TOKEN": matrix.token}, matrix, {"rooms": rooms})
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


async def say(name: str, where: Platform, person: int, words: str) -> bool:
    """`person` says `words` (each person in a conversation of their own); whether the
    platform got an acknowledgement (only Slack HTTP can tell: a 200)."""
    if name == "telegram":
        user = TgUser(2001 + person, f"Person{person}", username=f"person{person}")
        await where.fake.deliver(where.fake.message(private_chat(user), user, words))
    elif name == "slack":
        slack: FakeSlack = where.fake
        threads: dict[int, str] = where.extra.setdefault("threads", {})
        parent = threads.setdefault(person, slack.next_ts())  # a thread per person
        event = slack.message_event(f"<@{slack.bot_user_id}> {words}", thread_ts=parent)
        delivery = await slack.deliver_event(where.extra["events_url"], event)
        where.extra.setdefault("events", []).append((event, delivery.event_id))
        return delivery.status == 200
    elif name == "matrix":  # a DM room per person; the sync position is the acknowledgement
        where.fake.message(where.extra["rooms"][person], f"@person{person}:fake.test", words)
    else:
        discord: FakeDiscord = where.fake
        authors = where.extra.setdefault("authors", {})
        if person not in authors:
            authors[person] = discord.add_user(f"person{person}")
            discord.add_member(where.extra["guild"], authors[person])
        author = authors[person]
        await discord.deliver_message(where.extra["channels"][person], author=author,
                                      content=f"<@{discord.bot.id}> {words}")
    return True


def replies_sent(name: str, where: Platform) -> list[str]:
    """What each of the bot's messages shows now (a streamed reply as it ended)."""
    if name == "telegram":
        return list(where.fake.texts.values())
    if name == "slack":
        return list(where.fake.messages.values())
    if name == "matrix":
        return [str(s.content["body"]) for s in where.fake.messages_sent()]
    return list(where.fake.contents.values())


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


def run_config_head(folder: Path, model_url: str) -> str:
    """The part of a `threadline run` config every end-to-end test shares: a SQLite file in
    `folder`, the model at `model_url`, JSON logs, the ops server on any port; `channels:`
    follows."""
    return f"""\
store:
  url: sqlite+aiosqlite:///{folder / 'threadline.db'}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {model_url}
log:
  format: json
ops:
  port: 0
channels:
"""


def write_config(tmp_path: Path, name: str, where: Platform, model_url: str) -> Path:
    """`threadline run`'s config: one support agent on the platform, a SQLite file in
    `tmp_path`, the model at `model_url`, JSON logs."""
    config = tmp_path / "threadline.yaml"
    config.write_text(run_config_head(tmp_path, model_url) + f"""\
  {name}:
{where.channel_yaml}agents:
  support:
    system_prompt: You help.
    channels: [{name}]
""", encoding="utf-8")
    return config
