"""`threadline check` fails on what `threadline run` would refuse at start: a tool module that
cannot be imported, a Telegram webhook set on a token the channel polls with, and an alias that
would address two agents at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli, run_process_async
from tests.fakes.telegram import FakeTelegram


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"store:\n  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}\n"
                    "ops:\n  enabled: false\n" + body, encoding="utf-8")
    return path


def test_a_tool_that_cannot_be_imported_fails_the_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "checked_tools.py").write_text("def price(item: str) -> str:\n"
                                            "    return '3 EUR'\n", encoding="utf-8")
    path = write(tmp_path, "agents:\n  support:\n    tools: [checked_tools:price, "
                           "missing_tools:lookup]\n  billing:\n    tools: [checked_tools:refund]\n")
    outcome = run_cli(capsys, "check", str(path))
    assert outcome.code == 1
    failures = [line for line in outcome.err.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 2, outcome.err
    assert any(line.startswith("FAIL  agent support tools: agents.support.tools: cannot import "
                               "module 'missing_tools'") for line in failures), failures
    assert any(line.startswith("FAIL  agent billing tools: agents.billing.tools: module "
                               "'checked_tools' has no 'refund'") for line in failures), failures


def test_tools_that_import_are_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "checked_tools.py").write_text("def price(item: str) -> str:\n"
                                            "    return '3 EUR'\n", encoding="utf-8")
    path = write(tmp_path, "agents:\n  support:\n    tools: [checked_tools:price]\n")
    outcome = run_cli(capsys, "check", str(path))
    assert outcome.code == 0, outcome.err
    assert "ok    agent support tools: 1 tool(s) import: checked_tools:price" in outcome.out


async def test_a_webhook_on_a_polled_token_fails_the_check_with_what_to_do(
        tmp_path: Path) -> None:
    async with FakeTelegram() as telegram:
        telegram.webhook = {"url": "https://bots.example.com/telegram", "secret_token": None}
        path = write(tmp_path, f"""\
channels:
  telegram:
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
agents:
  support:
    channels: [telegram]
""")
        outcome = await run_process_async("check", str(path), cwd=tmp_path,
                                          env={"TELEGRAM_BOT_TOKEN": telegram.token})
        asked = [c.method for c in telegram.calls]
    assert outcome.code == 1, outcome.out
    assert asked == ["getMe", "getWebhookInfo"]
    failure = next(line for line in outcome.err.splitlines() if line.startswith("FAIL"))
    assert failure.startswith("FAIL  channel telegram (telegram): telegram channel 'telegram': "
                              "a webhook is set for this bot token "
                              "(https://bots.example.com/telegram)")
    assert "delete the webhook (Bot API deleteWebhook), or run this channel with mode: " \
        "webhook" in failure
    assert telegram.token not in outcome.err


@pytest.mark.parametrize(("aliases", "clash"), [
    ("billing:\n    aliases: [Support]", "'Support' is already the name of agent 'support'"),
    ("billing:\n    aliases: ['@help']", "'@help' is already an alias of agent 'support'"),
])
def test_an_alias_that_addresses_two_agents_is_refused_by_check_and_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], aliases: str, clash: str) -> None:
    path = write(tmp_path, f"agents:\n  support:\n    aliases: [help]\n  {aliases}\n")
    for command in ("check", "run"):
        outcome = run_cli(capsys, command, str(path))
        assert outcome.code == 2, (command, outcome.err)
        assert f"agents.billing.aliases.0: {clash}" in outcome.err
        assert "both would answer" in outcome.err
