"""The Slack app manifest for a Slack channel: pasted into Slack's "Create New App > From a
manifest", it sets up everything the channel needs in one step.

Scopes, bot events, slash commands, the assistant view and the Request URL (HTTP mode) or
Socket Mode all follow from what the channel does (`slack.channel`): it reads `message` events
in public and private channels, DMs and group DMs, posts and streams replies, shows the
assistant status and suggested prompts, and answers the team's slash commands (the same
Request URL receives events, commands and button presses). `threadline init --platform slack`
writes it beside the config; `docs/platforms/slack.md` walks through the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import yaml

from threadline.commands.registry import Command

if TYPE_CHECKING:  # the platform module imports this one when `init` asks for the manifest
    from threadline.channels.slack.platform import SlackSettings

# Read each kind of conversation, post (and stream) replies, read display names, take slash
# commands, and act as an assistant in the assistant pane.
BOT_SCOPES = ("channels:history", "groups:history", "im:history", "mpim:history", "chat:write",
              "users:read", "commands", "assistant:write")
BOT_EVENTS = ("message.channels", "message.groups", "message.im", "message.mpim",
              "assistant_thread_started", "assistant_thread_context_changed")
# With oauth: a workspace uninstalling the app or revoking its tokens (its tokens are deleted).
OAUTH_EVENTS = ("app_uninstalled", "tokens_revoked")
# Where HTTP mode's requests arrive from outside: replaced by the operator (see the header).
PUBLIC_URL = "https://bots.example.com"
FILE_NAME = "slack-app-manifest.yaml"
HEADER = """\
# Slack app manifest for Threadline's Slack channel, written by `threadline init`.
# Paste it at api.slack.com/apps: Create New App > From a manifest > pick the workspace.
# HTTP mode: replace {public} with the public HTTPS address that
# forwards to this machine's channels.slack.host:port (Slack checks the Request URL when
# you save it, so `threadline run` must be up). Socket Mode: set socket_mode_enabled: true
# and delete every url / request_url line. Step by step: docs/platforms/slack.md
"""


def manifest(settings: SlackSettings, commands: Iterable[Command], *,
             app_name: str = "Threadline", public_url: str = PUBLIC_URL) -> dict[str, Any]:
    """The manifest (as a mapping) for a channel with `settings` answering `commands`."""
    socket = settings.mode == "socket"
    request_url = f"{public_url.rstrip('/')}{settings.path}"
    urls: dict[str, str] = {} if socket else {"url": request_url}
    oauth = settings.oauth
    scopes = list(oauth.scopes if oauth else BOT_SCOPES)
    if settings.agent_name_as_username:
        scopes.append("chat:write.customize")
    assistant: dict[str, Any] = {"assistant_description":
                                 "Agents that remember the conversation; address one by name."}
    if settings.assistant_prompts:
        assistant["suggested_prompts"] = [p.model_dump() for p in settings.assistant_prompts]
    events: dict[str, Any] = {"bot_events": [*BOT_EVENTS, *(OAUTH_EVENTS if oauth else ())]}
    oauth_config: dict[str, Any] = {"scopes": {"bot": scopes}}
    if oauth is not None:  # installed in many workspaces: Slack sends installers back here
        oauth_config["redirect_urls"] = [f"{public_url.rstrip('/')}{oauth.redirect_path}"]
    interactivity: dict[str, Any] = {"is_enabled": True}
    if not socket:
        events = {"request_url": request_url, **events}
        interactivity["request_url"] = request_url
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {"name": app_name[:35],
                                "description": "LLM agents sharing one remembered conversation"},
        "features": {
            "app_home": {"home_tab_enabled": False, "messages_tab_enabled": True,
                         "messages_tab_read_only_enabled": False},
            "bot_user": {"display_name": app_name[:80], "always_online": True},
            "slash_commands": [
                {"command": f"/{command.name}", **urls, "description": command.description,
                 **({"usage_hint": command.usage} if command.usage else {}),
                 "should_escape": False}
                for command in commands],
            "assistant_view": assistant,
        },
        "oauth_config": oauth_config,
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket,
            "token_rotation_enabled": bool(oauth and oauth.token_rotation),
        },
    }


def manifest_file(settings: SlackSettings, commands: Iterable[Command]) -> str:
    """The manifest as the commented YAML file `threadline init` writes."""
    body = yaml.safe_dump(manifest(settings, commands), sort_keys=False, allow_unicode=True)
    return HEADER.format(public=PUBLIC_URL) + body
