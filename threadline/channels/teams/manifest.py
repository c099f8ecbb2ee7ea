"""The Teams app manifest for a Teams channel: zipped with two icons and uploaded to Teams
(Apps > Manage your apps > Upload an app), it installs the bot in chats and teams.

It declares the bot (`botId`, the Azure app registration's id) in the personal, group chat and
team scopes (taking files in 1:1 chats), the team's commands as the bot's command menu (a
title is the text Teams sends when it is picked, so each is the command as typed, `/forget`),
and the resource-specific permissions to receive every message of a channel or chat it is
installed in, not only those that @mention it (Threadline keeps each conversation's history
whole). `threadline init
--platform teams` writes it beside the config; `docs/platforms/teams.md` walks through the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from threadline.commands.registry import Command

FILE_NAME = "teams-app-manifest.json"
APP_ID_PLACEHOLDER = "TEAMS_APP_ID"  # replaced by the operator with the app registration's id
MANIFEST_VERSION = "1.19"
SCOPES = ("personal", "groupChat", "team")
# Receive every message where the app is installed, without an @mention (RSC).
RSC_PERMISSIONS = ("ChannelMessage.Read.Group", "ChatMessage.Read.Chat")
_MAX_COMMANDS = 10  # Teams shows at most ten commands per command list


def manifest(commands: Iterable[Command], *, app_id: str = APP_ID_PLACEHOLDER,
             bot_name: str = "Threadline") -> dict[str, Any]:
    """The manifest (as a mapping) of a bot answering `commands`."""
    return {
        "$schema": "https://developer.microsoft.com/en-us/json-schemas/teams/"
                   f"v{MANIFEST_VERSION}/MicrosoftTeams.schema.json",
        "manifestVersion": MANIFEST_VERSION,
        "version": "1.0.0",
        "id": app_id,
        "developer": {"name": "Threadline operator", "websiteUrl": "https://example.com",
                      "privacyUrl": "https://example.com/privacy",
                      "termsOfUseUrl": "https://example.com/terms"},
        "name": {"short": bot_name[:30], "full": f"{bot_name} agents"[:100]},
        "description": {"short": "LLM agents sharing one remembered conversation",
                        "full": "Agents that remember the conversation; address one by name."},
        "icons": {"outline": "outline.png", "color": "color.png"},
        "accentColor": "#FFFFFF",
        "bots": [{
            "botId": app_id, "scopes": list(SCOPES), "supportsFiles": True,
            "isNotificationOnly": False,
            "commandLists": [{"scopes": list(SCOPES), "commands": [
                {"title": f"/{command.name}"[:32], "description": command.description[:128]}
                for command in list(commands)[:_MAX_COMMANDS]]}],
        }],
        "permissions": ["identity", "messageTeamMembers"],
        "validDomains": [],
        "webApplicationInfo": {"id": app_id, "resource": f"api://botid-{app_id}"},
        "authorization": {"permissions": {"resourceSpecific": [
            {"name": name, "type": "Application"} for name in RSC_PERMISSIONS]}},
    }


def manifest_file(commands: Iterable[Command]) -> str:
    """The manifest as the JSON file `threadline init` writes (JSON has no comments: the
    steps are in docs/platforms/teams.md)."""
    return json.dumps(manifest(commands), indent=2) + "\n"
