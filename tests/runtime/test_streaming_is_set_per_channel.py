"""Streaming is on by default where the platform supports it, and off per channel in config."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.channels.platform import ChannelContext
from threadline.channels.registry import platform_for
from threadline.config import load_settings
from threadline.errors import ConfigError

CONFIG = """\
channels:
  slack:
    type: slack
    bot_token: ${SLACK_BOT_TOKEN}
    signing_secret: ${SLACK_SIGNING_SECRET}
    streaming: false
  telegram:
    type: telegram
    token: ${TELEGRAM_BOT_TOKEN}
    stream_interval: 2
  discord:
    type: discord
    token: ${DISCORD_BOT_TOKEN}
agents:
  support: {channels: [slack, telegram, discord]}
"""
ENV = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "TELEGRAM_BOT_TOKEN": "1:t",
       "DISCORD_BOT_TOKEN": "d"}


def test_streaming_is_on_unless_a_channel_turns_it_off(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    settings = load_settings(path, env=ENV)
    channels = {name: platform_for(entry.type).build(name, entry, ChannelContext())
                for name, entry in settings.channels.items()}
    assert {name: channel.streaming for name, channel in channels.items()} == {
        "slack": False, "telegram": True, "discord": True}


def test_a_pace_of_zero_is_refused_naming_the_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text(CONFIG.replace("stream_interval: 2", "stream_interval: 0"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env=ENV)
    assert f"{path}:10: channels.telegram.stream_interval: expected greater than 0, found 0" \
        in str(caught.value).splitlines()
