"""Microsoft Teams as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from threadline.channels.base import Channel
from threadline.channels.platform import ChannelContext, LiveReplySettings, Platform
from threadline.channels.teams.addresses import (
    DEFAULT_LOGIN_URL,
    DEFAULT_OPENID_METADATA_URL,
    DEFAULT_SERVICE_URL,
)
from threadline.commands.registry import Command


class TeamsSettings(LiveReplySettings):
    """One Teams bot (an Azure Bot with its app registration); the URLs point it at a proxy
    or a local server."""

    secret_fields = frozenset({"app_password"})

    type: Literal["teams"]
    """teams: this entry is a Microsoft Teams bot."""
    app_id: str = ""
    """The app registration's Application (client) ID, as ${TEAMS_APP_ID}: Azure Bot >
    Configuration > Microsoft App ID."""
    app_password: str = ""
    """A client secret of that app registration, as ${TEAMS_APP_PASSWORD}: Certificates &
    secrets > New client secret (its Value)."""
    tenant_id: str = ""
    """The app registration's Directory (tenant) ID, as ${TEAMS_TENANT_ID} (single-tenant bots;
    botframework.com for a legacy multi-tenant one)."""
    host: str = "127.0.0.1"
    """The address the messaging endpoint listens on (put HTTPS in front)."""
    port: int = Field(default=3978, ge=0, le=65535)
    """The port the messaging endpoint listens on (0: any free port, logged when bound)."""
    path: str = "/api/messages"
    """The path Teams posts activities to (the Azure Bot's messaging endpoint ends with it)."""
    bot_name: str = "Threadline"
    """The bot's name as people see and @mention it in Teams (also written in the manifest)."""
    login_url: str = DEFAULT_LOGIN_URL
    """Where the bot's token is asked for (https only), for a proxy or a local server."""
    openid_metadata_url: str = DEFAULT_OPENID_METADATA_URL
    """The Bot Framework's OpenID metadata; the keys of the channel's tokens are read from
    `/keys` beside it. For a proxy or a local server."""
    service_url: str = DEFAULT_SERVICE_URL
    """The connector for posts nothing asked for (a schedule's); replies go to the service URL
    each activity came with."""

    file_hosts: list[str] = Field(default_factory=list)
    """More hosts the files people send in 1:1 chats may be fetched from, as host or host:port
    (*.example.com for subdomains), for a proxy or a local server; these may be private or
    loopback addresses (default: none; files come from *.sharepoint.com only)."""

    def problems(self) -> list[str]:
        missing = [f"{name} (${{{variable}}})" for name, variable in (
            ("app_id", "TEAMS_APP_ID"), ("app_password", "TEAMS_APP_PASSWORD"),
            ("tenant_id", "TEAMS_TENANT_ID")) if not getattr(self, name)]
        problems = [f"{', '.join(missing)} missing: copy them from the bot's Azure app "
                    "registration (docs/platforms/teams.md)"] if missing else []
        if not self.login_url.startswith("https://"):
            problems.append(f"login_url must be an https:// address (MSAL refuses others), got "
                            f"{self.login_url!r}")
        if not self.path.startswith("/"):
            problems.append(f"path must start with '/', got {self.path!r}")
        return problems


def build(name: str, settings: TeamsSettings, context: ChannelContext) -> Channel:
    from threadline.channels.teams.channel import TeamsChannel

    return TeamsChannel(
        name=name, app_id=settings.app_id, app_password=settings.app_password,
        tenant_id=settings.tenant_id, host=settings.host, port=settings.port,
        path=settings.path, login_url=settings.login_url,
        login_url_set=settings.login_url != DEFAULT_LOGIN_URL,
        openid_metadata_url=settings.openid_metadata_url, service_url=settings.service_url,
        bot_name=settings.bot_name, allow_bots=settings.allow_bots,
        streaming=settings.streaming, stream_interval=settings.stream_interval,
        broadcasters=context.broadcasters, file_hosts=settings.file_hosts)


def setup_files(commands: Iterable[Command]) -> dict[str, str]:
    """The Teams app manifest for a team answering `commands` (zip it with two icons)."""
    from threadline.channels.teams.manifest import FILE_NAME, manifest_file

    return {FILE_NAME: manifest_file(commands)}


STARTER = """\
  teams:
    # Set-up, step by step: docs/platforms/teams.md. Put the app id into the manifest
    # `threadline init` wrote beside this file (teams-app-manifest.json) and upload it.
    type: teams
    app_id: ${TEAMS_APP_ID}                # Azure Bot > Configuration > Microsoft App ID
    app_password: ${TEAMS_APP_PASSWORD}    # the app registration's client secret (Value)
    tenant_id: ${TEAMS_TENANT_ID}          # the app registration's Directory (tenant) ID
    host: 0.0.0.0
    port: 3978                             # 0: any free port (logged when bound)
    path: /api/messages                    # the Azure Bot's messaging endpoint ends with it
    bot_name: Threadline
    streaming: true      # replies are edited in place as they are written (false: posted once)
    # stream_interval: 1   # seconds between two changes of one chat
"""

PLATFORM = Platform(name="teams", settings=TeamsSettings, build=build, starter=STARTER,
                    setup_files=setup_files)
