"""Errors say what is true and what to do: a database not made yet points to `db upgrade`, a
PostgreSQL database that does not exist is one line saying how to create it, a mistyped command
gets the nearest one, the offline-model notice appears only when an agent would use it, and
`/human` with nobody to notify promises no person."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli, run_process
from tests.conftest import pg_url_or_skip

TERMINAL = """\
store:
  url: sqlite+aiosqlite:///{db}
ops:
  enabled: false
channels:
  terminal: {{type: local, stdin: true, user: ada}}
agents:
  support: {{channels: [{{name: terminal, respond_to_all: true}}]{agent}}}
"""


def terminal(tmp_path: Path, *, agent: str = "", extra: str = "") -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(TERMINAL.format(db=tmp_path / "bot.db", agent=agent) + extra,
                    encoding="utf-8")
    return path


def test_a_schedule_before_the_first_run_says_to_create_the_database(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = terminal(tmp_path)
    added = ["schedule", "add", "--config", str(config), "--channel", "terminal",
             "--conversation", "local:main", "--when", "in 5 minutes", "--message", "stand-up"]
    refused = run_cli(capsys, *added)
    assert refused.code == 2
    assert "db upgrade` (with the same --db, --url or --config)" in refused.err
    assert "run` creates it on its first start" in refused.err
    assert run_cli(capsys, "db", "upgrade", "--config", str(config)).code == 0
    added_now = run_cli(capsys, *added)
    assert added_now.code == 0, added_now.err


def test_a_postgresql_database_that_does_not_exist_is_one_line_with_the_fix(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = pg_url_or_skip().rsplit("/", 1)[0] + f"/missing_{uuid.uuid4().hex[:8]}"
    name = url.rsplit("/", 1)[1]
    outcome = run_cli(capsys, "history", "list", "--url", url)
    assert outcome.code == 1
    lines = outcome.err.splitlines()
    assert len(lines) == 1, outcome.err
    assert f'database "{name}" does not exist' in lines[0]
    assert f"createdb -h 127.0.0.1 -p 5432 -U postgres {name}`" in lines[0]
    assert "sqlalche.me" not in outcome.err and "Traceback" not in outcome.err


@pytest.mark.parametrize(("typed", "meant"), [("rn", "run"), ("chek", "check"),
                                              ("histroy", "history")])
def test_a_mistyped_command_gets_the_nearest_one(
        capsys: pytest.CaptureFixture[str], typed: str, meant: str) -> None:
    outcome = run_cli(capsys, typed)
    assert outcome.code == 2
    assert outcome.err.startswith(f"threadline: error: no command {typed!r}; did you mean "
                                  f"`threadline {meant}`?")


def test_no_key_notice_only_when_an_agent_uses_the_default_provider(tmp_path: Path) -> None:
    config = terminal(tmp_path, agent=", provider: canned",
                      extra="providers:\n  canned: {type: offline}\n")
    outcome = run_process("run", str(config), cwd=tmp_path, stdin="hello\n")
    assert outcome.code == 0, outcome.err
    assert outcome.out.startswith("support> ")
    assert "ANTHROPIC_API_KEY" not in outcome.err
    checked = run_process("check", str(config), cwd=tmp_path)
    assert "ANTHROPIC_API_KEY" not in checked.out + checked.err


def test_human_with_nobody_to_notify_promises_no_person(tmp_path: Path) -> None:
    outcome = run_process("run", str(terminal(tmp_path)), cwd=tmp_path,
                          stdin="/human the bot cannot refund\n")
    assert outcome.code == 0, outcome.err
    assert "the bot stays quiet in this conversation until someone sends /bot on" in outcome.out
    assert "Nobody was notified, so a person answers only if one is reading" in outcome.out
    assert "A person will answer" not in outcome.out
