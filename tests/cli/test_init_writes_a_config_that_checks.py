"""`threadline init` writes a commented config that validates as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from threadline.channels.slack.platform import SlackSettings
from threadline.config import load_settings


@pytest.mark.parametrize("platform", [None, "slack", "telegram", "discord", "matrix"])
def test_starter_config_loads(tmp_path: Path, platform: str | None,
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bot.yaml"
    argv = ["init", str(path)] + (["--platform", platform] if platform else [])
    outcome = run_cli(capsys, *argv)
    assert outcome.code == 0
    assert f"wrote {path}" in outcome.err
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Threadline configuration")
    env = {"SLACK_BOT_TOKEN": "t", "SLACK_SIGNING_SECRET": "s", "TELEGRAM_BOT_TOKEN": "t",
           "DISCORD_BOT_TOKEN": "t", "MATRIX_ACCESS_TOKEN": "t"}
    settings = load_settings(path, env=env)
    expected = {"local", platform} - {None}
    assert set(settings.channels) == expected
    assert {c.name for c in settings.agents["support"].channels} == expected
    if platform == "slack":
        assert isinstance(settings.channels["slack"], SlackSettings)
    if platform is not None:  # each platform's entry points to its set-up guide, which exists
        guide = f"docs/platforms/{platform}.md"
        assert f"# Set-up, step by step: {guide}" in text
        assert (Path(__file__).parents[2] / guide).is_file()
        assert f"set-up guide: {guide}" in outcome.err


def test_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "threadline.yaml"
    path.write_text("mine", encoding="utf-8")
    outcome = run_cli(capsys, "init", str(path))
    assert outcome.code == 2
    assert "already exists; pass --force" in outcome.err
    assert path.read_text(encoding="utf-8") == "mine"
    assert run_cli(capsys, "init", str(path), "--force").code == 0
