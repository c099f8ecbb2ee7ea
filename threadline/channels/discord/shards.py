"""A Discord bot's gateway split into shards, this replica holding its share of them.

Discord sends each server's events on shard `(server_id >> 22) % shard_count` and direct
messages on shard 0 (`client.shard_of`). With `shards:` set, the channel's own client only
logs in (REST: replies, commands, checks); each shard this replica holds gets its own
discord.py client, identified as that shard, opened and closed on its own as the leases move
(`ShardHolder`). One client per shard rather than an `AutoShardedClient` with `shard_ids`:
the latter launches its shards once, in `connect()`, so taking over or giving up one shard
would mean reconnecting all of them, and the ones kept would miss their events meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import discord
import structlog

from threadline.channels.discord.client import build_client, guard_parsers, shard_of
from threadline.channels.discord.commands import CommandHandler, command_tree
from threadline.channels.shard_holder import ShardHolder
from threadline.channels.shard_leases import MemoryShardLeases, ShardLeases
from threadline.channels.supervise import SupervisedListener

if TYPE_CHECKING:
    from threadline.channels.discord.channel import DiscordChannel

log = structlog.get_logger("threadline.channels.discord")


def replica_name() -> str:
    """This process among the replicas: its host and pid, and a suffix a restart changes."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(slots=True)
class _Shard:
    client: discord.Client
    listener: SupervisedListener


class DiscordShards:
    """The shard connections of one Discord channel in this replica (see the module
    docstring)."""

    def __init__(self, channel: DiscordChannel, *, token: str, on_command: CommandHandler,
                 leases: ShardLeases | None, shard_count: int, lease_seconds: float,
                 guild_ready_timeout: float, start_timeout: float) -> None:
        assert channel.identity is not None
        self.channel = channel
        self.shard_count = shard_count
        self._token = token
        self._on_command = on_command
        self._guild_ready_timeout = guild_ready_timeout
        self.start_timeout = start_timeout
        self._shards: dict[int, _Shard] = {}
        self.holder = ShardHolder(
            leases=leases or MemoryShardLeases(), bot=f"discord:{channel.identity.user_id}",
            replica=replica_name(), shard_count=shard_count, lease_seconds=lease_seconds,
            open_shard=self._open, close_shard=self._close, channel=channel.name)

    def ours(self, guild_id: int | None) -> bool:
        """Whether an event of this server (None: a DM) is this replica's to handle now."""
        return self.holder.holds(shard_of(guild_id, self.shard_count))

    def problem(self) -> str | None:
        """What keeps a held shard deaf, or None (holding no shard is fine: it stands by)."""
        problems = [f"shard {shard}: {problem}" for shard, held in sorted(self._shards.items())
                    if (problem := held.listener.problem()) is not None]
        return "; ".join(problems) or None

    def holding(self) -> dict[str, object]:
        # The shards whose events it handles now: a replica woken from a pause longer than a
        # lease still has their connections open until its next round closes them, but
        # another replica holds them already, and /readyz must not name both.
        shards = [shard for shard in self.holder.held if self.holder.holds(shard)]
        return {"replica": self.holder.replica, "shards": shards,
                "shard_count": self.shard_count}

    async def _open(self, shard: int) -> None:
        """Log a shard's client in and connect it; returns once it is ready (or, after
        `start_timeout`, with its listener still trying)."""
        channel = self.channel
        client = build_client(channel, shard=(shard, self.shard_count),
                              guild_ready_timeout=self._guild_ready_timeout)
        guard_parsers(client, channel.skip_event)
        if channel.commands:  # invocations arrive on the shard of their server
            command_tree(client, channel.commands, self._on_command)

        async def drop_dead_gateway() -> None:
            ws = getattr(client, "ws", None)
            if ws is not None and not ws.socket.closed:
                await ws.close(code=4000)

        listener = SupervisedListener(
            channel=f"{channel.name} shard {shard}",
            listen=lambda: client.connect(reconnect=True), before_restart=drop_dead_gateway)
        self._shards[shard] = _Shard(client, listener)  # closed by `_close` even half-open
        await client.login(self._token)
        listener.start()
        try:
            async with asyncio.timeout(self.start_timeout):
                await client.wait_until_ready()
        except TimeoutError:
            log.warning("discord.shard_not_ready", channel=channel.name, shard=shard,
                        waited=self.start_timeout)

    async def _close(self, shard: int) -> None:
        held = self._shards.pop(shard, None)
        if held is None:
            return
        held.listener.halt()
        with contextlib.suppress(Exception):
            await held.client.close()
        await held.listener.stop(grace=5)
