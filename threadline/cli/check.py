"""`threadline check CONFIG`: is the config valid, and does every connection work?

Each connection is tried with the platform's own "who am I" call (Slack `auth.test`, Telegram
`getMe`, Discord `GET /users/@me`) and each model provider the agents use with its plug's own
check (a model list: proves the key and the address); SQLite files that do not exist yet are
not created, only their folder is checked.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from threadline.config import (
    ChannelSettings,
    DiscordChannelSettings,
    LocalChannelSettings,
    Settings,
    SlackChannelSettings,
    TelegramChannelSettings,
    load_settings,
)
from threadline.errors import ThreadlineError
from threadline.history.sql_store import SqlConversationStore
from threadline.provider_setup import checks as provider_checks
from threadline.spend.setup import spend_today

Check = Callable[[], Awaitable[str]]  # returns what was found; raises with what is wrong


def new_sqlite_file(url: str) -> str | None:
    """For a SQLite file not created yet: what will happen (raises if it cannot be created)."""
    if not url.startswith("sqlite"):
        return None
    path = Path(url.split(":///", 1)[1].split("?", 1)[0])
    if path.exists():
        return None
    folder = path.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ThreadlineError(f"the folder {str(folder)!r} for {str(path)!r} does not "
                              "exist or is not writable")
    return f"{path} will be created on first run"


async def check_store(settings: Settings) -> str:
    url = settings.store.url
    planned = await asyncio.to_thread(new_sqlite_file, url)
    if planned is not None:
        return planned
    async with SqlConversationStore(url, busy_timeout=settings.store.busy_timeout) as store:
        conversations = await store.count()
        spent = await spend_today(settings, store)
        return (f"{store.url.render_as_string(hide_password=True)}: {conversations} turns "
                f"stored; spent {spent}")


async def check_slack(channel: SlackChannelSettings) -> str:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=channel.bot_token,
                            base_url=channel.api_base_url or AsyncWebClient.BASE_URL)
    try:
        answer = await client.auth_test()
    except SlackApiError as exc:
        raise ThreadlineError(f"auth.test refused the bot token: {exc.response.get('error')} "
                              "(reinstall the app or copy the xoxb- token again)") from exc
    return f"auth.test ok: bot {answer.get('user')} ({answer.get('user_id')}) in " \
           f"{answer.get('team')}"


async def check_telegram(channel: TelegramChannelSettings) -> str:
    from telegram import Bot
    from telegram.error import InvalidToken, TelegramError

    bot = Bot(channel.token, base_url=channel.base_url) if channel.base_url else Bot(
        channel.token)
    try:
        async with bot:  # initializing asks getMe once and keeps the answer
            me = bot.bot
    except InvalidToken as exc:
        raise ThreadlineError("getMe refused the token; copy it again from @BotFather") from exc
    except TelegramError as exc:
        raise ThreadlineError(f"getMe failed: {exc}") from exc
    privacy = "" if me.can_read_all_group_messages else (
        "; privacy mode is on: in groups it sees only commands, @mentions and replies")
    return f"getMe ok: @{me.username}{privacy}"


async def check_discord(channel: DiscordChannelSettings) -> str:
    import discord

    base = (channel.api_base_url or discord.http.Route.BASE).rstrip("/")
    headers = {"Authorization": f"Bot {channel.token}"}
    async with aiohttp.ClientSession() as session, session.get(
            f"{base}/users/@me", headers=headers) as response:
        if response.status == 401:
            raise ThreadlineError("GET /users/@me refused the token (401); reset it in the "
                                  "Developer Portal and update the variable")
        if response.status != 200:
            raise ThreadlineError(f"GET /users/@me answered HTTP {response.status}")
        me = await response.json()
    return f"/users/@me ok: {me.get('username')} ({me.get('id')})"


def channel_check(channel: ChannelSettings) -> Check | None:
    if isinstance(channel, SlackChannelSettings):
        return lambda: check_slack(channel)
    if isinstance(channel, TelegramChannelSettings):
        return lambda: check_telegram(channel)
    if isinstance(channel, DiscordChannelSettings):
        return lambda: check_discord(channel)
    assert isinstance(channel, LocalChannelSettings)
    return None


async def run_checks(settings: Settings, per_check: float) -> list[tuple[str, str | None, str]]:
    """(subject, problem or None, detail) for every connection, checked concurrently."""
    checks: dict[str, Check] = {"database": lambda: check_store(settings),
                                **provider_checks(settings)}
    for name, channel in settings.channels.items():
        check = channel_check(channel)
        if check is not None:
            checks[f"channel {name} ({channel.type})"] = check

    async def one(subject: str, check: Check) -> tuple[str, str | None, str]:
        try:
            async with asyncio.timeout(per_check):
                return subject, None, await check()
        except TimeoutError:
            return subject, f"no answer within {per_check:g} s (unreachable?)", ""
        except (ThreadlineError, OSError, aiohttp.ClientError) as exc:
            return subject, str(exc) or type(exc).__name__, ""
        except Exception as exc:  # a check must report, whatever an SDK raises
            return subject, f"{type(exc).__name__}: {exc}", ""

    return list(await asyncio.gather(*(one(s, c) for s, c in checks.items())))


def main(args: argparse.Namespace) -> int:
    """`threadline check CONFIG`: exit 2 for an invalid config, 1 if a connection fails."""
    settings = load_settings(args.config)
    print(f"ok    config {args.config}: {len(settings.agents)} agent(s), "
          f"{len(settings.channels)} channel(s)")
    results = asyncio.run(run_checks(settings, args.timeout))
    failed = 0
    for subject, problem, detail in results:
        if problem is None:
            print(f"ok    {subject}: {detail}")
        else:
            failed += 1
            print(f"FAIL  {subject}: {problem}", file=sys.stderr)
    return 1 if failed else 0
