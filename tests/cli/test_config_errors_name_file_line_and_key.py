"""A bad config is refused before anything starts, with file, line, key, expected and found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from threadline.config import load_settings
from threadline.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_says_how_to_create_one(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "check", str(tmp_path / "nope.yaml"))
    assert outcome.code == 2
    assert "nope.yaml: no such config file; create one with `threadline init" in outcome.err


def test_bad_yaml_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "store:\n  url: [unclosed\nagents: {}\n")
    outcome = run_cli(capsys, "check", str(path))
    assert outcome.code == 2
    assert f"threadline: error: {path}:3: not valid YAML" in outcome.err


def test_wrong_values_are_each_reported_with_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, """\
channels:
  slack:
    type: slack
    mode: sockets
    bot_token: ${SLACK_BOT_TOKEN}
    prot: 3000
agents:
  support:
    memory:
      token_budget: 10
""")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={"SLACK_BOT_TOKEN": "xoxb-1"})
    problems = str(caught.value).splitlines()
    assert f"{path}:4: channels.slack.mode: expected 'http' or 'socket', found 'sockets'" \
        in problems
    assert any(p.startswith(f"{path}:6: channels.slack.prot: unknown setting") for p in problems)
    assert f"{path}:10: agents.support.memory.token_budget: expected greater than or equal " \
           "to 50, found 10" in problems


def test_unknown_agent_channel_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    path = write(tmp_path, """\
channels:
  local: {type: local}
agents:
  support:
    channels: [local, slak]
""")
    outcome = run_cli(capsys, "check", str(path))
    assert outcome.code == 2
    assert (f"{path}:5: agents.support.channels.1: unknown channel 'slak' "
            "(channels defined: local)") in outcome.err


def test_literal_secret_is_refused_with_the_variable_to_use(tmp_path: Path) -> None:
    path = write(tmp_path, """\
channels:
  tg:
    type: telegram
    token: "123456:ABC-real-looking-token"
agents:
  support: {channels: [tg]}
""")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert str(caught.value) == (
        f"{path}:4: channels.tg.token: a literal secret is not allowed in the config file; put "
        "it in the environment or .env and write ${TG_TOKEN} here")


def test_a_secret_the_platform_declares_is_refused_literally(tmp_path: Path) -> None:
    path = write(tmp_path, """\
channels:
  slack:
    type: slack
    bot_token: ${SLACK_BOT_TOKEN}
    signing_secret: "8f742231b10e8888abcd99yyyzzz85a5"
""")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={"SLACK_BOT_TOKEN": "xoxb-1"})
    assert str(caught.value).startswith(
        f"{path}:5: channels.slack.signing_secret: a literal secret is not allowed")


def test_missing_secret_names_variable_and_env_file(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, """\
channels:
  discord:
    type: discord
    token: ${DISCORD_BOT_TOKEN}
agents:
  support: {channels: [discord]}
""")
    outcome = run_cli(capsys, "check", str(path))
    assert outcome.code == 2
    assert (f"{path}:4: channels.discord.token: environment variable DISCORD_BOT_TOKEN is not "
            f"set; export it or add `DISCORD_BOT_TOKEN=...` to {tmp_path / '.env'}"
            ) in outcome.err


def test_secret_from_dotenv_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DISCORD_BOT_TOKEN=from-dotenv\n", encoding="utf-8")
    path = write(tmp_path, """\
channels:
  discord: {type: discord, token: "${DISCORD_BOT_TOKEN}"}
agents:
  support: {channels: [discord]}
""")
    settings = load_settings(path, env={})
    assert settings.channels["discord"].token == "from-dotenv"  # type: ignore[union-attr]
    overridden = load_settings(path, env={"DISCORD_BOT_TOKEN": "from-env"})
    assert overridden.channels["discord"].token == "from-env"  # type: ignore[union-attr]


def test_empty_file_is_the_embedded_default(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, ""), env={})
    assert settings.store.url == "sqlite:///threadline.db"
    assert list(settings.channels) == ["local"]
    assert settings.resolved_provider() == "offline"
    keyed = load_settings(write(tmp_path, ""), env={"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert keyed.resolved_provider() == "anthropic"


def test_database_password_must_come_from_the_environment(tmp_path: Path) -> None:
    literal = write(tmp_path, "store:\n  url: postgresql+asyncpg://bot:hunter2@db/threadline\n")
    with pytest.raises(ConfigError, match=r"threadline.yaml:2: store.url: the database password "
                                          r"is written in the config file"):
        load_settings(literal, env={})
    referenced = write(tmp_path, "store:\n  url: postgresql+asyncpg://bot:${PGPASS}@db/x\n")
    assert load_settings(referenced, env={"PGPASS": "pw"}).store.url == \
        "postgresql+asyncpg://bot:pw@db/x"


def test_tool_and_prompt_file_problems_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, f"""\
store: {{url: "sqlite+aiosqlite:///{tmp_path / 'x.db'}"}}
agents:
  support:
    tools: [no_such_module:lookup]
    channels: [local]
""")
    outcome = run_cli(capsys, "run", str(path))
    assert outcome.code == 2
    assert "threadline: error: agents.support.tools: cannot import module 'no_such_module' for " \
        "'no_such_module:lookup'" in outcome.err
    path = write(tmp_path, "agents:\n  support:\n    system_prompt_file: gone.md\n")
    outcome = run_cli(capsys, "run", str(path))
    assert outcome.code == 2
    assert f"agents.support.system_prompt_file: cannot read '{tmp_path / 'gone.md'}'" \
        in outcome.err
