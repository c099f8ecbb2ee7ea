"""Slack as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from threadline.channels.platform import ChannelContext, LiveReplySettings, Platform
from threadline.channels.slack.channel import SlackChannel
from threadline.channels.slack.installations import (
    SlackInstallationBook,
    TokenCipher,
    key_problem,
)
from threadline.channels.slack.manifest import BOT_SCOPES
from threadline.channels.slack.oauth import SlackOAuth
from threadline.commands.registry import Command


class SuggestedPrompt(BaseModel):
    """One suggested prompt of Slack's assistant pane: the button's title, the message sent."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    title: str = Field(min_length=1)
    """The button's title."""
    message: str = Field(min_length=1)
    """The message sent when it is pressed."""


class SlackOAuthSettings(BaseModel):
    """A Slack app other workspaces install (OAuth): each workspace answered with its own token.

    bolt serves `install_path` (a redirect to Slack's authorize page, with a `state` kept in
    the database) and `redirect_path` (the code exchanged for the workspace's tokens, stored
    encrypted with `token_key`); events are answered with the token of the workspace they
    come from. Needs `mode: http` (the Slack Marketplace refuses Socket Mode apps).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    client_id: str = Field(min_length=1)
    """The app's Client ID, as ${SLACK_CLIENT_ID}: Basic Information > App Credentials."""
    client_secret: str = Field(min_length=1)
    """The app's Client Secret, as ${SLACK_CLIENT_SECRET}: Basic Information > App
    Credentials."""
    token_key: str = Field(min_length=1)
    """The Fernet key each workspace's tokens are encrypted with in the database, as
    ${THREADLINE_SLACK_TOKEN_KEY} (make one: python -c "from cryptography.fernet import Fernet;
    print(Fernet.generate_key().decode())"); losing it means installing the app again."""
    scopes: list[str] = Field(default_factory=lambda: list(BOT_SCOPES), min_length=1)
    """The bot scopes asked for at install (default: the ones the app manifest declares)."""
    user_scopes: list[str] = Field(default_factory=list)
    """User scopes asked for at install (default: none; the bot needs none)."""
    install_path: str = "/slack/install"
    """Where a person starts installing the app (sent on to Slack's authorize page)."""
    redirect_path: str = "/slack/oauth_redirect"
    """Where Slack sends the installer back with a code (the Redirect URL's path)."""
    redirect_uri: str | None = None
    """The public URL of redirect_path, as listed under OAuth & Permissions > Redirect URLs
    (unset: Slack uses the app's only Redirect URL)."""
    state_expiration_seconds: int = Field(default=600, gt=0)
    """How long an install may take between the install page and the redirect."""
    token_rotation: bool = True
    """Refresh expiring tokens with their refresh token and keep the new ones (for apps with
    token rotation turned on; tokens without a refresh token never expire)."""
    rotate_minutes_before_expiry: int = Field(default=120, gt=0, le=720)
    """How long before a rotating token expires it is refreshed (tokens live 12 hours)."""
    on_uninstall: Literal["keep", "purge"] = "keep"
    """What happens to a workspace's history when the app is uninstalled there: keep it, or
    purge every conversation of that workspace (its tokens are deleted either way)."""
    authorize_url: str | None = None
    """Slack's authorize page, for a local server (default: Slack's)."""

    @field_validator("token_key")
    @classmethod
    def _fernet_key(cls, key: str) -> str:
        problem = key_problem(key)
        if problem is not None:
            raise ValueError(problem)
        return key

    @field_validator("install_path", "redirect_path")
    @classmethod
    def _path(cls, path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"must start with '/', got {path!r}")
        return path


class SlackSettings(LiveReplySettings):
    """One Slack app; `api_base_url` points the Web API at a proxy or a local server."""

    secret_fields = frozenset({"bot_token", "signing_secret", "app_token", "token_key"})

    type: Literal["slack"]
    """slack: this entry is a Slack channel."""
    mode: Literal["http", "socket"] = "http"
    """http: Slack posts events to host:port/path (several replicas behind a load balancer);
    socket: one outbound Socket Mode connection (one process per app)."""
    bot_token: str | None = None
    """The Bot User OAuth Token (xoxb-), as ${SLACK_BOT_TOKEN}: OAuth & Permissions (one
    workspace; with oauth each workspace's token comes from its installation instead)."""
    oauth: SlackOAuthSettings | None = None
    """Install the app in many workspaces through Slack's OAuth flow (mode http only)."""
    signing_secret: str | None = None
    """The app's Signing Secret, as ${SLACK_SIGNING_SECRET} (http mode): Basic Information > App
    Credentials."""
    app_token: str | None = None
    """An app-level token (xapp-) with connections:write, as ${SLACK_APP_TOKEN} (socket mode)."""
    host: str = "127.0.0.1"
    """The address HTTP mode listens on (put TLS in front)."""
    port: int = Field(default=3000, ge=0, le=65535)
    """The port HTTP mode listens on (0: any free port, logged when bound)."""
    path: str = "/slack/events"
    """The path Slack posts events, slash commands and button presses to."""
    api_base_url: str | None = None
    """The Web API root, for a proxy or a local server (default: Slack's)."""
    file_hosts: list[str] = Field(default_factory=list)
    """More hosts shared files may be fetched from with the bot token, as host or host:port
    (*.example.com for subdomains), for a proxy or a local server; these may be private or
    loopback addresses (default: none; files come from files.slack.com only)."""
    reply_in_thread: bool = True
    """Answer a top-level channel message in a thread under it (false: in the channel)."""
    agent_name_as_username: bool = False
    """Post each reply under its agent's name (needs the chat:write.customize scope)."""
    assistant_prompts: list[SuggestedPrompt] = Field(default_factory=list, max_length=4)
    """Suggested prompts offered when someone opens the app's assistant pane (at most 4)."""

    @property
    def needs_backend(self) -> bool:
        return self.oauth is not None

    def problems(self) -> list[str]:
        if self.oauth is not None and self.mode != "http":
            return ["oauth needs mode http (Slack does not accept Socket Mode apps for "
                    "installing in other workspaces)"]
        if self.oauth is not None and self.bot_token:
            return ["set either bot_token (one workspace) or oauth (each installed workspace's "
                    "own token), not both"]
        if self.oauth is None and not self.bot_token:
            return ["bot_token is missing (${SLACK_BOT_TOKEN}); or set oauth to install the app "
                    "in many workspaces"]
        if self.mode == "http" and not self.signing_secret:
            return ["mode http needs signing_secret (${SLACK_SIGNING_SECRET})"]
        if self.mode == "socket" and not self.app_token:
            return ["mode socket needs app_token (${SLACK_APP_TOKEN})"]
        return []


def build(name: str, settings: SlackSettings, context: ChannelContext) -> SlackChannel:
    return SlackChannel(
        name=name, bot_token=settings.bot_token or "", mode=settings.mode,
        oauth=_oauth(name, settings.oauth, context) if settings.oauth else None,
        signing_secret=settings.signing_secret, app_token=settings.app_token,
        host=settings.host, port=settings.port, path=settings.path,
        api_base_url=settings.api_base_url, file_hosts=settings.file_hosts,
        reply_in_thread=settings.reply_in_thread,
        agent_name_as_username=settings.agent_name_as_username, allow_bots=settings.allow_bots,
        assistant_prompts=[p.model_dump() for p in settings.assistant_prompts],
        streaming=settings.streaming, stream_interval=settings.stream_interval,
        broadcasters=context.broadcasters)


def _oauth(name: str, settings: SlackOAuthSettings, context: ChannelContext) -> SlackOAuth:
    """The channel's OAuth set-up on the backend's installation book (None when the backend
    keeps none: the channel says so when it starts or is checked)."""
    book = context.platform_part
    return SlackOAuth(
        client_id=settings.client_id, client_secret=settings.client_secret,
        cipher=TokenCipher(settings.token_key, channel=name),
        book=book if isinstance(book, SlackInstallationBook) else None,
        scopes=tuple(settings.scopes), user_scopes=tuple(settings.user_scopes),
        install_path=settings.install_path, redirect_path=settings.redirect_path,
        redirect_uri=settings.redirect_uri,
        state_expiration_seconds=settings.state_expiration_seconds,
        token_rotation=settings.token_rotation,
        rotate_minutes_before_expiry=settings.rotate_minutes_before_expiry,
        purge_on_uninstall=settings.on_uninstall == "purge",
        authorize_url=settings.authorize_url)


def setup_files(commands: Iterable[Command]) -> dict[str, str]:
    """The app manifest for the starter's settings and `commands`, to paste into Slack."""
    from threadline.channels.slack.manifest import FILE_NAME, manifest_file

    starter = SlackSettings(type="slack", bot_token="-", signing_secret="-")
    return {FILE_NAME: manifest_file(starter, commands)}


STARTER = """\
  slack:
    # Set-up, step by step: docs/platforms/slack.md. Create the app from the manifest
    # `threadline init` wrote beside this file (slack-app-manifest.yaml).
    type: slack
    # http: Slack posts events to host:port/path (scales to several replicas behind a
    # load balancer). socket: one outbound Socket Mode connection (one replica per app).
    mode: http
    bot_token: ${SLACK_BOT_TOKEN}            # xoxb-..., OAuth & Permissions
    signing_secret: ${SLACK_SIGNING_SECRET}  # Basic Information > App Credentials
    # app_token: ${SLACK_APP_TOKEN}          # xapp-..., only for mode: socket
    host: 0.0.0.0
    port: 3000                               # 0: any free port (logged when bound)
    path: /slack/events
    # api_base_url: http://127.0.0.1:8080/api/  # a proxy or a local Web API server
    reply_in_thread: true
    streaming: true      # replies appear as they are written (false: posted once, whole)
    # stream_interval: 1   # seconds between two changes of one Slack channel
    # assistant_prompts:                     # suggested in each new assistant thread (max 4)
    #   - {title: Order status, message: Where is my order?}
"""

PLATFORM = Platform(name="slack", settings=SlackSettings, build=build, starter=STARTER,
                    setup_files=setup_files)
