"""Gateway shards shared by replicas: the leases a backend keeps, and how a round reads them.

A platform whose events arrive over shard connections (Discord's gateway) must have exactly
one connection per shard across all replicas: two would each receive every event of the
shard. The replicas agree through the backend's `shard_leases` part. Each replica runs
rounds (`ShardHolder`, beside this module): one transaction that says the replica is alive,
renews the leases it holds, takes free or expired shards up to its fair share, and says which
it holds beyond that share so it can close them and `release` them.

Times are the database's own clock (every replica reads the same one, so clocks that disagree
between machines cannot make two holders), except the holder's local deadline, which is
measured from before it sent the round and so always ends before the lease does.

A backend need not keep leases across processes when one process serves it (the memory
backend keeps them in memory); it must make a claim atomic, so that two replicas racing for
one shard cannot both take it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ShardRound:
    """What one round found and did for one replica.

    `held`: the shards whose lease this replica holds after the round (renewed or newly
    claimed). `claimed`: the newly claimed ones, each with the replica that held it before
    (None: nobody, or a clean release). `surplus`: held shards beyond the fair share, to close
    and release. `replicas`: the live replicas, sorted. `other_counts`: shard counts live
    leases of other replicas use that differ from ours (then nothing was claimed).
    """

    held: frozenset[int]
    claimed: dict[int, str | None]
    surplus: tuple[int, ...]
    replicas: tuple[str, ...]
    other_counts: frozenset[int] = frozenset()


def fair_share(shard_count: int, replicas: tuple[str, ...], replica: str) -> int:
    """How many shards `replica` should hold: an equal share, the remainder going to the
    replicas first in sorted order, so every replica computes the same split."""
    ordered = sorted(replicas)
    if replica not in ordered:
        return 0
    base, extra = divmod(shard_count, len(ordered))
    return base + (1 if ordered.index(replica) < extra else 0)


def surplus(held: set[int] | frozenset[int], share: int) -> tuple[int, ...]:
    """The held shards beyond `share`, highest ids first: those a replica gives up."""
    return tuple(sorted(held, reverse=True)[:max(0, len(held) - share)])


class ShardLeases(Protocol):
    """Shard leases kept by the backend (its `shard_leases` part); see the module docstring.

    `bot` names whose shards they are (a platform and its bot's id), so two bots may share
    one database.
    """

    async def run_round(self, *, bot: str, replica: str, shard_count: int,
                        lease_seconds: float, claim: bool = True) -> ShardRound:
        """One transaction: mark `replica` alive for `lease_seconds`, renew its unexpired
        leases, and (when `claim`) take free or expired shards below `shard_count` up to its
        fair share among the live replicas."""
        ...

    async def release(self, *, bot: str, replica: str, shards: tuple[int, ...]) -> None:
        """Give up these shards (their connections are closed) so another replica may take
        them at once."""
        ...

    async def leave(self, *, bot: str, replica: str) -> None:
        """Give up every shard and the replica's presence (a clean stop)."""
        ...


@dataclass(slots=True)
class _Lease:
    holder: str | None = None
    until: float = 0.0
    shard_count: int = 0


class MemoryShardLeases:
    """Leases in this process's memory: for the memory backend and a channel built without a
    backend, where this process is the only replica (its clock is `time.monotonic`)."""

    def __init__(self) -> None:
        self._leases: dict[tuple[str, int], _Lease] = {}
        self._alive: dict[tuple[str, str], float] = {}

    async def run_round(self, *, bot: str, replica: str, shard_count: int,
                        lease_seconds: float, claim: bool = True) -> ShardRound:
        now = time.monotonic()
        until = now + lease_seconds
        self._alive = {k: v for k, v in self._alive.items() if v > now}
        self._alive[(bot, replica)] = until
        replicas = tuple(sorted(r for (b, r) in self._alive if b == bot))
        mine = [(shard, lease) for (b, shard), lease in self._leases.items()
                if b == bot and lease.holder == replica and lease.until > now]
        for _, lease in mine:
            lease.until = until
        others = frozenset(lease.shard_count for (b, _), lease in self._leases.items()
                           if b == bot and lease.holder not in (None, replica)
                           and lease.until > now and lease.shard_count != shard_count)
        share = fair_share(shard_count, replicas, replica)
        held = {shard for shard, _ in mine}
        claimed: dict[int, str | None] = {}
        for shard in range(shard_count):
            if not claim or others or len(held) + len(claimed) >= share:
                break
            lease = self._leases.setdefault((bot, shard), _Lease())
            if lease.holder is None or lease.until <= now:
                claimed[shard] = lease.holder
                lease.holder, lease.until, lease.shard_count = replica, until, shard_count
        held |= set(claimed)
        return ShardRound(held=frozenset(held), claimed=claimed, surplus=surplus(held, share),
                          replicas=replicas, other_counts=others)

    async def release(self, *, bot: str, replica: str, shards: tuple[int, ...]) -> None:
        for shard in shards:
            lease = self._leases.get((bot, shard))
            if lease is not None and lease.holder == replica:
                lease.holder, lease.until = None, 0.0

    async def leave(self, *, bot: str, replica: str) -> None:
        await self.release(bot=bot, replica=replica,
                           shards=tuple(s for (b, s) in self._leases if b == bot))
        self._alive.pop((bot, replica), None)
