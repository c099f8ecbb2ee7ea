"""A port that is already taken stops every server we open with one line naming the port and
the setting that chose it, exit code 2 and no traceback; `check` finds it first."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import Outcome, run_process, run_process_async
from tests.runtime.platforms import platform


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another program listens on while the test runs."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def assert_one_line(outcome: Outcome, port: int, setting: str) -> None:
    assert outcome.code == 2, outcome.err
    assert "Traceback" not in outcome.err
    errors = [line for line in outcome.err.splitlines() if line.startswith("threadline: error")]
    assert errors == [
        f"threadline: error: port {port} on 127.0.0.1 is already in use ({setting}): another "
        "program, or another threadline, listens there; stop it or set "
        f"{setting} to a free port (0 picks one)"]


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"store:\n  url: sqlite:///{tmp_path / 'bot.db'}\nlog:\n  level: warning\n"
                    f"{body}", encoding="utf-8")
    return path


def test_run_with_the_ops_port_taken(tmp_path: Path, taken_port: int) -> None:
    write_config(tmp_path, f"ops:\n  port: {taken_port}\n")
    outcome = run_process("run", "--no-input", cwd=tmp_path)
    assert_one_line(outcome, taken_port, "ops.port")
    checked = run_process("check", cwd=tmp_path)
    assert checked.code == 1
    assert f"FAIL  port {taken_port} (ops.port): port {taken_port} on 127.0.0.1 is already " \
        "in use (ops.port)" in checked.err


def test_console_with_its_port_taken(tmp_path: Path, taken_port: int) -> None:
    write_config(tmp_path, "")
    run_process("db", "upgrade", cwd=tmp_path)
    outcome = run_process("console", "--port", str(taken_port), cwd=tmp_path)
    assert_one_line(outcome, taken_port, "--port")


async def test_slack_http_mode_with_its_port_taken(tmp_path: Path, taken_port: int) -> None:
    async with platform("slack") as slack:
        port = slack.extra["events_url"].split(":")[2].split("/")[0]
        entry = slack.channel_yaml.replace(f"port: {port}", f"port: {taken_port}")
        write_config(tmp_path, f"ops: {{enabled: false}}\nchannels:\n  slack:\n{entry}"
                               "agents:\n  support: {channels: [slack]}\n")
        outcome = await run_process_async("run", "--no-input", cwd=tmp_path, env=slack.env)
        checked = await run_process_async("check", cwd=tmp_path, env=slack.env)
    assert_one_line(outcome, taken_port, "channels.slack.port")
    assert checked.code == 1
    assert f"FAIL  port {taken_port} (channels.slack.port): port {taken_port} on 127.0.0.1 " \
        "is already in use" in checked.err


async def test_telegram_webhook_with_its_port_taken(tmp_path: Path, taken_port: int) -> None:
    async with platform("telegram") as telegram:
        entry = telegram.channel_yaml + (
            "    mode: webhook\n    webhook_url: https://bots.example.invalid/telegram\n"
            "    webhook_secret_token: ${TELEGRAM_WEBHOOK_SECRET}\n"
            f"    webhook_port: {taken_port}\n")
        write_config(tmp_path, f"ops: {{enabled: false}}\nchannels:\n  telegram:\n{entry}"
                               "agents:\n  support: {channels: [telegram]}\n")
        outcome = await run_process_async("run", "--no-input", cwd=tmp_path, env={
            **telegram.env, "TELEGRAM_WEBHOOK_SECRET": "s3cret"})
        assert not [c for c in telegram.fake.calls if c.method == "setWebhook"]  # never set
    assert_one_line(outcome, taken_port, "channels.telegram.webhook_port")
