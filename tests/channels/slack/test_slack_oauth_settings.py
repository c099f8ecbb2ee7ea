"""`oauth:` settings that cannot work are refused when the config loads, saying what to set."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from threadline.channels.slack.platform import SlackSettings
from threadline.config import Settings, load_settings
from threadline.errors import ConfigError

KEY = Fernet.generate_key().decode()


def load(tmp_path: Path, channel: str, env: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
channels:
  slack:
    type: slack
    signing_secret: ${{SLACK_SIGNING_SECRET}}
{channel}agents:
  support: {{channels: [slack]}}
""", encoding="utf-8")
    return load_settings(path, env={"SLACK_SIGNING_SECRET": "s", "SLACK_CLIENT_SECRET": "c",
                             "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
                             "THREADLINE_SLACK_TOKEN_KEY": KEY, **(env or {})})


OAUTH = """\
    oauth:
      client_id: "1.2"
      client_secret: ${SLACK_CLIENT_SECRET}
      token_key: ${THREADLINE_SLACK_TOKEN_KEY}
"""


def test_oauth_in_http_mode_without_a_bot_token_loads(tmp_path: Path) -> None:
    slack = load(tmp_path, OAUTH).channels["slack"]
    assert isinstance(slack, SlackSettings)
    assert slack.mode == "http" and slack.bot_token is None
    assert slack.oauth is not None and slack.oauth.client_id == "1.2"
    assert slack.oauth.token_key == KEY


@pytest.mark.parametrize(("extra", "said"), [
    ("    bot_token: ${SLACK_BOT_TOKEN}\n", "set either bot_token .one workspace. or oauth"),
    ("    mode: socket\n    app_token: ${SLACK_APP_TOKEN}\n", "oauth needs mode http"),
])
def test_oauth_with_a_bot_token_or_socket_mode_is_refused(tmp_path: Path, extra: str,
                                                          said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        load(tmp_path, extra + OAUTH)


def test_neither_a_bot_token_nor_oauth_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="bot_token is missing"):
        load(tmp_path, "")


def test_a_token_key_written_literally_is_refused_as_a_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="token_key"):
        load(tmp_path, OAUTH.replace("${THREADLINE_SLACK_TOKEN_KEY}", KEY))
