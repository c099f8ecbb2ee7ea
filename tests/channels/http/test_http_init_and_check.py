"""`threadline init --platform http` writes a starter that loads and checks; `check` says what
is wrong with the channel (a short secret, a callback nobody answers) in words, and a command
sent as a message is answered like on every platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.channels.http.conftest import Rig
from tests.cli.helpers import run_cli, run_process
from threadline.channels.http.platform import HttpSettings
from threadline.config import load_settings

SECRET_ENV = {"THREADLINE_HTTP_SECRET": "s" * 64}


def test_the_starter_loads_and_names_its_guide(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "threadline.yaml"
    assert run_cli(capsys, "init", "--platform", "http", str(path)).code == 0
    text = path.read_text(encoding="utf-8")
    assert "# Set-up, step by step: docs/platforms/http.md" in text
    assert (Path(__file__).parents[3] / "docs/platforms/http.md").is_file()
    settings = load_settings(path, env=SECRET_ENV)
    channel = settings.channels["http"]
    assert isinstance(channel, HttpSettings) and channel.secret == "s" * 64
    assert {c.name for c in settings.agents["support"].channels} == {"local", "http"}


def test_check_names_a_short_secret_and_an_unreachable_callback(tmp_path: Path) -> None:
    assert run_process("init", "--platform", "http", str(tmp_path / "threadline.yaml"),
                       cwd=tmp_path).code == 0
    config = tmp_path / "threadline.yaml"
    text = config.read_text(encoding="utf-8").replace("port: 8090", "port: 0")
    config.write_text(text.replace("    # callback_url: https://example.invalid/threadline/",
                                   "    callback_url: http://127.0.0.1:9/replies #"),
                      encoding="utf-8")
    checked = run_process("check", str(config), cwd=tmp_path,
                          env={"THREADLINE_HTTP_SECRET": "short"})
    lines = [line for line in checked.err.splitlines() + checked.out.splitlines()
             if "http" in line]
    assert any("the secret is 5 characters; use at least 24" in line for line in lines), lines
    assert any("could not reach the callback at 127.0.0.1:9 to deliver replies: the "
               "connection was refused" in line and "channels.http.callback_url" in line
               for line in lines), lines


async def test_a_command_sent_as_a_message_is_answered(rig: Rig) -> None:
    await rig.caller.send(rig.channel.url, conversation_id="c-1", message_id="m-1",
                          text="/agents")
    [reply] = await rig.caller.wait_for_replies(1)
    assert "support" in reply["text"] and "billing" in reply["text"]
