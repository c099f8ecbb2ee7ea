"""`threadline check` validates the config and runs each channel's own check: who the bot is,
and what would keep it deaf (missing Slack scopes, Telegram privacy mode, Discord intents)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli, run_process_async
from tests.fakes.discord_gateway import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import FakeTelegram


def config(tmp_path: Path, slack: FakeSlack, telegram: FakeTelegram, discord: FakeDiscord) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
channels:
  slack:
    type: slack
    bot_token: ${{SLACK_BOT_TOKEN}}
    signing_secret: ${{SLACK_SIGNING_SECRET}}
    api_base_url: {slack.url}
  telegram:
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
  discord:
    type: discord
    token: ${{DISCORD_BOT_TOKEN}}
    api_base_url: {discord.api_base_url}
ops:
  port: 0  # `check` tries the ops port: the default one may be a running bot's
agents:
  support:
    channels: [slack, telegram, discord]
""", encoding="utf-8")
    return path


async def test_every_connection_ok(tmp_path: Path) -> None:
    async with FakeSlack() as slack, FakeTelegram() as telegram, FakeDiscord() as discord:
        path = config(tmp_path, slack, telegram, discord)
        outcome = await run_process_async("check", str(path), cwd=tmp_path, env={
            "SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
            "TELEGRAM_BOT_TOKEN": telegram.token, "DISCORD_BOT_TOKEN": discord.token})
        assert outcome.code == 0, outcome.err
        assert "ok    config" in outcome.out
        assert f"ok    channel slack (slack): bot {slack.bot_name} (U0BOT)" in outcome.out
        assert f"ok    channel telegram (telegram): bot {telegram.bot.username} " \
            f"({telegram.bot.id})" in outcome.out
        assert "warn  channel telegram (telegram): Privacy mode is on" in outcome.out
        assert f"ok    channel discord (discord): bot {discord.bot.username}" in outcome.out
        # Groups with no admins: any member may /forget them or hand the whole chat over.
        assert ("warn  admins: any member of a group may /forget its history or hand the "
                "whole chat to people; set access.admins") in outcome.out
        # The invite asks for the bot and its commands, with the four permissions it needs:
        # View Channels 1<<10, Send Messages 1<<11, Read Message History 1<<16, Send Messages
        # in Threads 1<<38.
        assert ("; add it to a server with https://discord.com/oauth2/authorize?client_id="
                f"{discord.application_id}&scope=bot+applications.commands&permissions="
                f"{(1 << 10) + (1 << 11) + (1 << 16) + (1 << 38)}\n") in outcome.out
        assert "will be created on first run" in outcome.out
        assert "no ANTHROPIC_API_KEY" in outcome.out
        assert len(slack.calls_to("auth.test")) == 1
        assert [c.method for c in telegram.calls] == ["getMe", "getWebhookInfo"]
        assert not (tmp_path / "threadline.db").exists()  # check creates nothing


async def test_what_keeps_each_bot_deaf_is_a_warning_from_its_channel(tmp_path: Path) -> None:
    async with FakeSlack(scopes=("chat:write", "users:read", "im:history")) as slack, \
            FakeTelegram() as telegram, FakeDiscord(grant_message_content=False) as discord:
        path = config(tmp_path, slack, telegram, discord)
        outcome = await run_process_async("check", str(path), cwd=tmp_path, env={
            "SLACK_BOT_TOKEN": slack.bot_token, "SLACK_SIGNING_SECRET": slack.signing_secret,
            "TELEGRAM_BOT_TOKEN": telegram.token, "DISCORD_BOT_TOKEN": discord.token})
    assert outcome.code == 0, outcome.err  # the bots connect: warnings do not fail the check
    warnings = [line for line in outcome.out.splitlines() if line.startswith("warn")]
    slack_lines = [w for w in warnings if w.startswith("warn  channel slack (slack): ")]
    assert len(slack_lines) == 2
    assert "'channels:history' scope" in slack_lines[0]
    assert "'groups:history' scope" in slack_lines[1]
    assert any(w.startswith("warn  channel telegram (telegram): Privacy mode is on for "
                            "@support_bot") for w in warnings)
    assert any(w.startswith("warn  channel discord (discord): ") and "Message Content" in w
               for w in warnings), warnings
    assert len(slack.calls_to("auth.test")) == 1


async def test_rejected_tokens_one_line_each_exit_1(tmp_path: Path) -> None:
    async with FakeSlack() as slack, FakeTelegram() as telegram, FakeDiscord() as discord:
        path = config(tmp_path, slack, telegram, discord)
        outcome = await run_process_async("check", str(path), cwd=tmp_path, env={
            "SLACK_BOT_TOKEN": "xoxb-wrong", "SLACK_SIGNING_SECRET": "s",
            "TELEGRAM_BOT_TOKEN": "1:wrong", "DISCORD_BOT_TOKEN": "wrong"})
    assert outcome.code == 1
    failures = [line for line in outcome.err.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 3, outcome.err
    assert "FAIL  channel slack (slack): Slack channel 'slack': auth.test rejected bot_token " \
        "(invalid_auth)" in outcome.err
    assert "FAIL  channel telegram (telegram): telegram channel 'telegram': could not read " \
        "the bot's settings (getMe): the bot token was rejected" in outcome.err
    assert "FAIL  channel discord (discord): Discord channel 'discord': Discord rejected the " \
        "bot token (401)" in outcome.err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_database_and_model_fail_with_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: postgresql+asyncpg://postgres@127.0.0.1:{closed_port()}/x
model:
  base_url: http://127.0.0.1:{closed_port()}
ops:
  port: 0
""", encoding="utf-8")
    outcome = run_cli(capsys, "check", str(path), "--timeout", "5")
    assert outcome.code == 1
    database, model = sorted(x for x in outcome.err.splitlines() if x.startswith("FAIL"))
    assert database.startswith("FAIL  database: conversation store postgresql+asyncpg://")
    assert "check that the database is running and reachable" in database
    assert model == "FAIL  model: the Anthropic API could not be reached: Connection error."
