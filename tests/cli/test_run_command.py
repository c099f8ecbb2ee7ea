"""`threadline run`: a terminal room from stdin, and the errors a user sees at start."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import run_process

TERMINAL = """\
store:
  url: {url}
ops:
  enabled: false
channels:
  terminal: {{type: local, stdin: true, user: ada}}
agents:
  support: {{channels: [{{name: terminal, respond_to_all: true}}]}}
"""


def test_lines_from_stdin_are_answered_and_remembered(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(TERMINAL.format(url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"),
                      encoding="utf-8")
    first = run_process("run", str(config), cwd=tmp_path, stdin="my locker code is 5150\n")
    assert first.code == 0, first.err
    assert "no ANTHROPIC_API_KEY set: agents answer with the offline model" in first.err
    assert first.out.startswith("support> [offline model]")
    second = run_process("run", str(config), cwd=tmp_path,
                         stdin="what did I say about my locker code?\n")
    assert second.code == 0, second.err
    assert "my locker code is 5150" in second.out
    shown = run_process("history", "show", "local:main", "--db", str(tmp_path / "bot.db"),
                        cwd=tmp_path)
    assert [line.split(" ", 3)[3].split(":")[0] for line in shown.out.splitlines()
            if line.startswith("#")] == ["ada (user)", "support (agent)"] * 2


def test_missing_config_exit_2(tmp_path: Path) -> None:
    outcome = run_process("run", "missing.yaml", cwd=tmp_path)
    assert outcome.code == 2
    assert outcome.err.strip() == ("threadline: error: missing.yaml: no such config file; "
                                   "create one with `threadline init missing.yaml`")


def test_unreachable_database_exit_1(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(TERMINAL.format(url="postgresql+asyncpg://postgres@127.0.0.1:1/x"),
                      encoding="utf-8")
    outcome = run_process("run", str(config), cwd=tmp_path, stdin="")
    assert outcome.code == 1
    assert "threadline: error: conversation store postgresql+asyncpg://postgres@127.0.0.1:1/x " \
        "could not open or upgrade its schema" in outcome.err
