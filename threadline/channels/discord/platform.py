"""Discord as a platform: its `channels:` settings, its channel, its starter config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from threadline.channels.discord.channel import DiscordChannel
from threadline.channels.platform import ChannelContext, LiveReplySettings, Platform


class DiscordSettings(LiveReplySettings):
    """One bot token; `api_base_url` and `gateway_url` point it at a proxy or a local server."""

    secret_fields = frozenset({"token"})

    type: Literal["discord"]
    """discord: this entry is a Discord channel."""
    token: str
    """The bot's token (Developer Portal > Bot > Reset Token), as ${DISCORD_BOT_TOKEN}."""
    api_base_url: str | None = None
    """The REST API root, for a proxy or a local server (default: Discord's)."""
    gateway_url: str | None = None
    """The gateway WebSocket address, for a proxy or a local server (default: Discord's)."""
    file_hosts: list[str] = Field(default_factory=list)
    """More hosts attachments may be fetched from, as host or host:port (*.example.com for
    subdomains), for a proxy or a local server; these may be private or loopback addresses
    (default: none; attachments come from Discord's CDN only)."""
    shards: Literal["auto"] | PositiveInt | None = None
    """Split the gateway into shards shared by the replicas on one database (Discord requires
    shards from 2,500 servers): a number, or auto for as many as Discord recommends. Each
    replica then holds about shards / replicas of them (default: one connection, no shards)."""
    catch_up: float = Field(default=900.0, ge=0.0)
    """On each new gateway session, read what was said in the conversations heard within this
    many seconds after the newest turn heard there, and answer it: Discord never sends what
    was said while the bot was down or restarting, or a shard had no holder (0: off)."""
    shard_lease_seconds: float = Field(default=15.0, ge=1.0)
    """How long a replica's claim on a shard lasts unless renewed (every fifth of it): a dead
    replica's shards are taken over within about 1.2 x this plus one gateway connect."""


def build(name: str, settings: DiscordSettings, context: ChannelContext) -> DiscordChannel:
    return DiscordChannel(
        name=name, token=settings.token, api_base_url=settings.api_base_url,
        gateway_url=settings.gateway_url, file_hosts=settings.file_hosts, shards=settings.shards,
        shard_leases=context.shard_leases, shard_lease_seconds=settings.shard_lease_seconds,
        allow_bots=settings.allow_bots,
        streaming=settings.streaming, stream_interval=settings.stream_interval,
        catch_up=settings.catch_up, broadcasters=context.broadcasters)


STARTER = """\
  discord:
    # Set-up, step by step: docs/platforms/discord.md (`threadline check` prints the invite URL)
    type: discord
    # One gateway connection per bot token; with `shards:` set, the replicas on one
    # database share the shards (docs/platforms/discord.md, "Sharding and replicas").
    # shards: auto
    # Enable "Message Content Intent" for the bot in the Developer Portal.
    token: ${DISCORD_BOT_TOKEN}
    # A proxy or a local server for the REST API and the gateway:
    # api_base_url: http://127.0.0.1:8082/api/v10
    # gateway_url: ws://127.0.0.1:8082/gateway
    streaming: true      # one message edited as the reply is written
    # stream_interval: 1   # seconds between two edits in one channel
"""

PLATFORM = Platform(name="discord", settings=DiscordSettings, build=build, starter=STARTER)
