"""`threadline init --platform slack` writes an app manifest Slack's "create from a manifest"
accepts: the fields Slack's manifest schema requires are there, with the scopes, events and
commands the channel needs, for HTTP mode (Request URLs) and Socket Mode (none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.helpers import run_cli
from threadline.channels.slack.channel import _NEEDED_SCOPES
from threadline.channels.slack.manifest import manifest
from threadline.channels.slack.platform import SlackSettings
from threadline.team import default_commands

TOP_LEVEL = {"_metadata", "display_information", "features", "oauth_config", "settings",
             "functions", "workflows", "datastores", "outgoing_domains", "types"}


def schema_problems(doc: dict[str, Any]) -> list[str]:
    """What Slack's app manifest schema requires, checked field by field (its reference:
    display_information.name 1-35 characters; bot_user.display_name 1-80; each slash command
    a /command of at most 32 characters, a description, and a url unless Socket Mode; event
    subscriptions with bot_events and, without Socket Mode, a request_url; interactivity's
    request_url when enabled without Socket Mode; assistant_view's assistant_description;
    socket_mode_enabled a boolean)."""
    problems = [f"unknown top-level key {k}" for k in doc if k not in TOP_LEVEL]
    name = doc.get("display_information", {}).get("name")
    if not (isinstance(name, str) and 1 <= len(name) <= 35):
        problems.append("display_information.name")
    features = doc.get("features", {})
    bot_name = features.get("bot_user", {}).get("display_name")
    if not (isinstance(bot_name, str) and 1 <= len(bot_name) <= 80):
        problems.append("features.bot_user.display_name")
    settings = doc.get("settings", {})
    socket = settings.get("socket_mode_enabled")
    if not isinstance(socket, bool):
        problems.append("settings.socket_mode_enabled")
    for command in features.get("slash_commands", []):
        if not (str(command.get("command", "")).startswith("/")
                and len(command["command"]) <= 32 and command.get("description")):
            problems.append(f"slash command {command}")
        if not socket and not str(command.get("url", "")).startswith("https://"):
            problems.append(f"slash command {command.get('command')} url")
    if "assistant_view" in features and not features["assistant_view"].get(
            "assistant_description"):
        problems.append("features.assistant_view.assistant_description")
    scopes = doc.get("oauth_config", {}).get("scopes", {}).get("bot")
    if not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
        problems.append("oauth_config.scopes.bot")
    events = settings.get("event_subscriptions", {})
    if not events.get("bot_events"):
        problems.append("settings.event_subscriptions.bot_events")
    if not socket and not str(events.get("request_url", "")).startswith("https://"):
        problems.append("settings.event_subscriptions.request_url")
    interactivity = settings.get("interactivity", {})
    if interactivity.get("is_enabled") and not socket and not str(
            interactivity.get("request_url", "")).startswith("https://"):
        problems.append("settings.interactivity.request_url")
    if socket and any("url" in c for c in features.get("slash_commands", [])):
        problems.append("Socket Mode slash commands have no url")
    return problems


def test_init_writes_a_manifest_beside_the_config(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "threadline.yaml"
    outcome = run_cli(capsys, "init", str(path), "--platform", "slack")
    assert outcome.code == 0, outcome.err
    written = tmp_path / "slack-app-manifest.yaml"
    assert f"wrote {written}" in outcome.err
    text = written.read_text(encoding="utf-8")
    assert "docs/platforms/slack.md" in text
    doc = yaml.safe_load(text)
    assert schema_problems(doc) == []
    assert doc["settings"]["socket_mode_enabled"] is False
    assert doc["settings"]["event_subscriptions"]["request_url"] == \
        "https://bots.example.com/slack/events"  # the starter's path, on the public host
    # Everything the channel's own check asks for is granted by the manifest.
    assert set(_NEEDED_SCOPES) <= set(doc["oauth_config"]["scopes"]["bot"])
    assert {"commands", "assistant:write"} <= set(doc["oauth_config"]["scopes"]["bot"])
    assert {"message.channels", "message.groups", "message.im", "assistant_thread_started"} \
        <= set(doc["settings"]["event_subscriptions"]["bot_events"])
    # Every command `run` answers with this config: the built-in ones and the features'.
    assert [c["command"] for c in doc["features"]["slash_commands"]] == [
        *(f"/{c.name}" for c in default_commands()),
        "/link", "/human", "/bot", "/remind", "/reminders"]


def test_a_second_init_does_not_overwrite_the_manifest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slack-app-manifest.yaml").write_text("mine", encoding="utf-8")
    outcome = run_cli(capsys, "init", str(tmp_path / "threadline.yaml"), "--platform", "slack")
    assert outcome.code == 2
    assert "slack-app-manifest.yaml already exists; pass --force" in outcome.err
    assert not (tmp_path / "threadline.yaml").exists()


def test_socket_mode_manifest_has_no_request_urls() -> None:
    settings = SlackSettings(type="slack", mode="socket", bot_token="-", app_token="-",
                             agent_name_as_username=True,
                             assistant_prompts=[{"title": "Order", "message": "Where is it?"}])
    doc = manifest(settings, default_commands())
    assert schema_problems(doc) == []
    assert doc["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in doc["settings"]["event_subscriptions"]
    assert "chat:write.customize" in doc["oauth_config"]["scopes"]["bot"]
    assert doc["features"]["assistant_view"]["suggested_prompts"] == [
        {"title": "Order", "message": "Where is it?"}]


def test_the_required_fields_check_can_fail() -> None:
    doc = manifest(SlackSettings(type="slack", bot_token="-", signing_secret="-"),
                   default_commands())
    del doc["settings"]["event_subscriptions"]["request_url"]
    doc["display_information"]["name"] = "x" * 36
    assert schema_problems(doc) == ["display_information.name",
                                    "settings.event_subscriptions.request_url"]


def test_an_oauth_app_lists_its_redirect_url_and_hears_uninstalls_and_revocations() -> None:
    settings = SlackSettings(type="slack", signing_secret="-", oauth={
        "client_id": "1.2", "client_secret": "-", "token_key": "A" * 43 + "=",
        "scopes": ["chat:write", "im:history"], "token_rotation": True})
    doc = manifest(settings, default_commands(), public_url="https://bots.example.org/")

    assert schema_problems(doc) == []
    assert doc["oauth_config"]["redirect_urls"] == [
        "https://bots.example.org/slack/oauth_redirect"]
    assert doc["oauth_config"]["scopes"]["bot"] == ["chat:write", "im:history"]
    events = doc["settings"]["event_subscriptions"]["bot_events"]
    assert {"app_uninstalled", "tokens_revoked", "message.im"} <= set(events)
    assert doc["settings"]["token_rotation_enabled"] is True
