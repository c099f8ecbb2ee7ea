"""One replica's share of a platform's shards: leased through the backend, connected while held.

Every `lease_seconds / 5` the holder runs a round (`ShardLeases.run_round`): the replica says
it is alive, renews its leases and claims free or expired shards up to its fair share. Then it
makes its connections match what it holds: a shard it newly holds is opened, a shard it no
longer holds (or holds beyond its share, when another replica has joined) is closed first and
released after, so the next holder never overlaps it.

Why never two connections to one shard: a lease ends `lease_seconds` after the database
accepted its renewal, and the holder trusts it only until `lease_seconds - every` after it
*sent* that renewal, by its own monotonic clock. When rounds fail or hang that long, it closes
every connection, one interval before any other replica may claim them. A process paused
longer than that (a stopped VM) wakes with its deadline passed: `holds()` is False, so the
events its sockets still deliver are dropped and its next round closes them.

A dead replica's shards are taken over within about `1.2 x lease_seconds` (the lease running
out, plus one round of the others) plus one gateway connect.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from threadline.channels.shard_leases import ShardLeases, ShardRound
from threadline.errors import StoreError
from threadline.waiting import cancel_and_wait

log = structlog.get_logger("threadline.channels.shards")

ROUNDS_PER_LEASE = 5


class ShardHolder:
    """Holds this replica's fair share of `shard_count` shards (see the module docstring).

    `open_shard(id)` connects one shard and returns once it receives (or gave up waiting);
    `close_shard(id)` disconnects it and returns once the connection is closed.
    """

    def __init__(self, *, leases: ShardLeases, bot: str, replica: str, shard_count: int,
                 lease_seconds: float, open_shard: Callable[[int], Awaitable[None]],
                 close_shard: Callable[[int], Awaitable[None]], channel: str) -> None:
        self.leases = leases
        self.bot = bot
        self.replica = replica
        self.shard_count = shard_count
        self.lease_seconds = lease_seconds
        self.every = lease_seconds / ROUNDS_PER_LEASE
        self._open_shard = open_shard
        self._close_shard = close_shard
        self._held: set[int] = set()
        # Connections being opened: in the background, so rounds keep renewing meanwhile.
        self._opening: dict[int, asyncio.Task[None]] = {}
        self._deadline = 0.0  # time.monotonic() until which the leases are surely ours
        self._task: asyncio.Task[None] | None = None
        self._log = log.bind(channel=channel, bot=bot, replica=replica,
                             shard_count=shard_count)

    @property
    def held(self) -> tuple[int, ...]:
        """The shards whose connection this replica keeps open, lowest first."""
        return tuple(sorted(self._held))

    def holds(self, shard: int) -> bool:
        """Whether an event of `shard` is this replica's to handle now."""
        return shard in self._held and time.monotonic() < self._deadline

    async def start(self) -> None:
        """The first round (the shards it finds free are open, or gave up waiting, on
        return), then the rounds every `every` seconds in the background."""
        await self._step()
        self._task = asyncio.create_task(self._run(), name=f"shards {self.bot}")
        if self._opening:  # rounds go on meanwhile: opening may outlast a lease
            await asyncio.wait(list(self._opening.values()))

    async def stop(self) -> None:
        """Close every connection, then give up the leases so others take them at once."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
        held = self.held
        await self._close(held, event="shards.released", reason="stopping")
        try:
            await self.leases.leave(bot=self.bot, replica=self.replica)
        except StoreError as exc:  # they run out on their own within lease_seconds
            self._log.warning("shards.leave_failed", error=str(exc))

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self._step()

    async def _step(self) -> None:
        sent = time.monotonic()
        # A round may not outlive the leases: then the connections close in time.
        limit = self._deadline - sent if self._held else self.lease_seconds
        try:
            async with asyncio.timeout(max(limit, 0.0)):
                done = await self.leases.run_round(
                    bot=self.bot, replica=self.replica, shard_count=self.shard_count,
                    lease_seconds=self.lease_seconds)
        except Exception as exc:  # whatever failed, the deadline below still holds
            self._log.warning("shards.round_failed", error=str(exc) or repr(exc),
                              held=self.held)
            if self._held and time.monotonic() + self.every >= self._deadline:
                await self._close(self.held, event="shards.lost",
                                  reason="leases not renewed in time")
            return
        self._deadline = sent + self.lease_seconds - self.every
        await self._follow(done)

    async def _follow(self, done: ShardRound) -> None:
        """Make the open connections what the round says this replica holds."""
        if done.other_counts:
            self._log.error(
                "shards.count_disagrees", other_counts=sorted(done.other_counts),
                what_to_do="every replica must use one shard count: set `shards:` to a number "
                           "in the config, or restart the replicas together")
        await self._close(tuple(sorted(self._held - done.held)), event="shards.lost",
                          reason="another replica holds the lease")
        if done.surplus:
            await self._close(done.surplus, event="shards.released",
                              reason=f"rebalancing over {len(done.replicas)} replicas")
        starting = sorted(done.held - self._held - set(done.surplus))
        for shard in starting:
            before = done.claimed.get(shard)
            if before is not None and before != self.replica:
                self._log.info("shards.taken_over", shard=shard, from_replica=before)
            else:
                self._log.info("shards.claimed", shard=shard)
        for shard in starting:
            self._held.add(shard)
            self._opening[shard] = asyncio.create_task(self._open(shard),
                                                       name=f"open shard {shard}")
        if starting or done.surplus:
            self._log.info("shards.holding", shards=self.held,
                           replicas=len(done.replicas))

    async def _open(self, shard: int) -> None:
        try:
            await self._open_shard(shard)
        except Exception as exc:
            self._log.error("shards.open_failed", shard=shard, error=repr(exc))
            await self._close((shard,), event="shards.released", reason="could not connect")
        finally:
            if self._opening.get(shard) is asyncio.current_task():
                del self._opening[shard]

    async def _close(self, shards: tuple[int, ...], *, event: str, reason: str) -> None:
        """Close these shards' connections, then release their leases (best effort: a lease
        not released runs out by itself)."""
        if not shards:
            return
        for shard in shards:
            self._held.discard(shard)
            opening = self._opening.pop(shard, None)
            if opening is not None and opening is not asyncio.current_task():
                await cancel_and_wait(opening)
            try:
                await self._close_shard(shard)
            except Exception as exc:  # closing is best effort; the socket is dropped anyway
                self._log.warning("shards.close_failed", shard=shard, error=repr(exc))
            self._log.info(event, shard=shard, reason=reason)
        try:
            await self.leases.release(bot=self.bot, replica=self.replica, shards=shards)
        except StoreError as exc:
            self._log.warning("shards.release_failed", shards=shards, error=str(exc))
