"""The Slack manifest `threadline init` writes declares the commands `threadline run` of that
config answers (its registry, not a list kept beside it), and each platform guide names every
one of them: a command added to the registry fails here until the guide says it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import run_cli
from threadline.channels.slack.manifest import manifest
from threadline.channels.slack.platform import SlackSettings
from threadline.cli.init import offered_commands, render

GUIDES = Path(__file__).parents[2] / "docs" / "platforms"


def starter_commands(platform: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "threadline.yaml"
    return [c.name for c in offered_commands(render(platform, str(path)), path)]


def test_the_slack_manifest_declares_what_run_answers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "init", "--platform", "slack", str(tmp_path / "t.yaml")).code == 0
    written = yaml.safe_load((tmp_path / "slack-app-manifest.yaml").read_text(encoding="utf-8"))
    declared = [c["command"] for c in written["features"]["slash_commands"]]
    answered = starter_commands("slack", tmp_path)
    assert declared == [f"/{name}" for name in answered]
    assert {"/human", "/bot", "/remind", "/reminders", "/link"} <= set(declared)


def test_agent_names_as_usernames_ask_for_the_customize_scope() -> None:
    plain = SlackSettings(type="slack", bot_token="-", signing_secret="-")
    named = plain.model_copy(update={"agent_name_as_username": True})
    assert "chat:write.customize" not in manifest(plain, [])["oauth_config"]["scopes"]["bot"]
    assert "chat:write.customize" in manifest(named, [])["oauth_config"]["scopes"]["bot"]


@pytest.mark.parametrize("platform", ["slack", "telegram", "discord", "matrix"])
def test_each_guide_names_every_command(platform: str, tmp_path: Path) -> None:
    guide = (GUIDES / f"{platform}.md").read_text(encoding="utf-8")
    named = {m.replace("_", "-") for m in re.findall(r"`/([a-z_-]+)", guide)}
    missing = [c for c in starter_commands(platform, tmp_path) if c not in named]
    assert not missing, f"docs/platforms/{platform}.md does not name /{', /'.join(missing)}"


def test_the_slack_guide_does_not_count_the_urls_to_replace() -> None:
    guide = (GUIDES / "slack.md").read_text(encoding="utf-8")
    assert not re.search(r"\((one|two|three|four|five|six|seven|eight|nine|ten|\d+) places\)",
                         guide)
