"""Slack as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from threadline.channels.platform import ChannelContext, LiveReplySettings, Platform
from threadline.channels.slack.channel import SlackChannel
from threadline.commands.registry import Command


class SuggestedPrompt(BaseModel):
    """One suggested prompt of Slack's assistant pane: the button's title, the message sent."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    title: str = Field(min_length=1)
    """The button's title."""
    message: str = Field(min_length=1)
    """The message sent when it is pressed."""


class SlackSettings(LiveReplySettings):
    """One Slack app; `api_base_url` points the Web API at a proxy or a local server."""

    secret_fields = frozenset({"bot_token", "signing_secret", "app_token"})

    type: Literal["slack"]
    """slack: this entry is a Slack channel."""
    mode: Literal["http", "socket"] = "http"
    """http: Slack posts events to host:port/path (several replicas behind a load balancer);
    socket: one outbound Socket Mode connection (one process per app)."""
    bot_token: str
    """The Bot User OAuth Token (xoxb-), as ${SLACK_BOT_TOKEN}: OAuth & Permissions."""
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
    reply_in_thread: bool = True
    """Answer a top-level channel message in a thread under it (false: in the channel)."""
    agent_name_as_username: bool = False
    """Post each reply under its agent's name (needs the chat:write.customize scope)."""
    assistant_prompts: list[SuggestedPrompt] = Field(default_factory=list, max_length=4)
    """Suggested prompts offered when someone opens the app's assistant pane (at most 4)."""

    def problems(self) -> list[str]:
        if self.mode == "http" and not self.signing_secret:
            return ["mode http needs signing_secret (${SLACK_SIGNING_SECRET})"]
        if self.mode == "socket" and not self.app_token:
            return ["mode socket needs app_token (${SLACK_APP_TOKEN})"]
        return []


def build(name: str, settings: SlackSettings, context: ChannelContext) -> SlackChannel:
    return SlackChannel(
        name=name, bot_token=settings.bot_token, mode=settings.mode,
        signing_secret=settings.signing_secret, app_token=settings.app_token,
        host=settings.host, port=settings.port, path=settings.path,
        api_base_url=settings.api_base_url, reply_in_thread=settings.reply_in_thread,
        agent_name_as_username=settings.agent_name_as_username, allow_bots=settings.allow_bots,
        assistant_prompts=[p.model_dump() for p in settings.assistant_prompts],
        streaming=settings.streaming, stream_interval=settings.stream_interval)


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
