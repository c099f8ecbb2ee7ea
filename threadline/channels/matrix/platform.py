"""The Matrix platform: its settings, how its channel is built, and its starter config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from threadline.channels.matrix.channel import MatrixChannel
from threadline.channels.matrix.sync_tokens import SyncTokens
from threadline.channels.platform import ChannelContext, ChannelSettings, Platform


class MatrixSettings(ChannelSettings):
    """A Matrix bot account on a homeserver, logged in with an access token."""

    secret_fields = frozenset({"access_token"})

    type: Literal["matrix"]
    """matrix: this entry is a Matrix account."""
    homeserver: str
    """The homeserver's client-server API URL (https://matrix.example.org)."""
    access_token: str
    """The bot account's access token, as ${MATRIX_ACCESS_TOKEN}."""
    auto_join: list[str] = Field(default_factory=list)
    """Who may invite the bot into a room, each a user id (@alice:example.org), a server
    (example.org) or * for anyone; other invites are ignored (default: none)."""
    file_hosts: list[str] = Field(default_factory=list)
    """More hosts files may be fetched from, as host or host:port, if the homeserver's media
    API redirects elsewhere (the homeserver itself is always allowed)."""
    sync_timeout: int = Field(default=30_000, ge=0, le=300_000)
    """How long in milliseconds one /sync long poll waits for events."""
    streaming: bool = True
    """Show the bot typing while an agent works (replies are posted whole: Matrix shows an
    edited message as edited)."""


def build(name: str, settings: MatrixSettings, context: ChannelContext) -> MatrixChannel:
    part = context.platform_part
    return MatrixChannel(
        name=name, homeserver=settings.homeserver, access_token=settings.access_token,
        sync_tokens=part if isinstance(part, SyncTokens) else None,
        auto_join=settings.auto_join, file_hosts=settings.file_hosts,
        sync_timeout_ms=settings.sync_timeout, allow_bots=settings.allow_bots,
        streaming=settings.streaming)


STARTER = """\
  matrix:
    # Set-up, step by step: docs/platforms/matrix.md
    type: matrix
    homeserver: https://matrix.example.org   # your homeserver's URL
    access_token: ${MATRIX_ACCESS_TOKEN}     # the bot account's token
    # Rooms are joined when the inviter (or the inviter's server) is listed here:
    auto_join: [example.org]
    # sync_timeout: 30000                    # ms one /sync waits for events
"""

PLATFORM = Platform(name="matrix", settings=MatrixSettings, build=build, starter=STARTER)
