"""Shard leases in the history's database (`threadline.channels.shard_leases` says what a round
does).

Every time is the database's clock, read inside the transaction (`clock_timestamp()` on
PostgreSQL; on SQLite, whose processes share one machine, that machine's clock), so replicas
on machines whose clocks disagree still agree on when a lease ends. A claim is one guarded
update (`holder` is nobody, or the lease ended): two replicas racing for a shard, on either
database, cannot both take it; PostgreSQL re-checks the guard after waiting for the other
writer, SQLite runs writers one at a time (`BEGIN IMMEDIATE`). Shards are claimed in id order,
so two rounds lock rows in the same order.
"""

from __future__ import annotations

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore
from threadline.channels.shard_leases import ShardRound, fair_share, surplus

_NOW = {
    "postgresql": "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
    "sqlite": "SELECT CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)",
}


def _now_us(conn: SqlRunner) -> int:
    return int(conn.rows(_NOW[conn.dialect], {})[0][0])


def _round(conn: SqlRunner, bot: str, replica: str, shard_count: int, lease_seconds: float,
           claim: bool) -> ShardRound:
    now = _now_us(conn)
    until = now + int(lease_seconds * 1_000_000)
    key = {"bot": bot, "me": replica, "now": now, "until": until}
    conn.rowcount("DELETE FROM threadline_shard_replicas WHERE bot = :bot "
                  "AND alive_until_us <= :now", key)
    conn.rowcount("INSERT INTO threadline_shard_replicas (bot, replica, alive_until_us) "
                  "VALUES (:bot, :me, :until) ON CONFLICT (bot, replica) "
                  "DO UPDATE SET alive_until_us = :until", key)
    replicas = tuple(sorted(str(row[0]) for row in conn.rows(
        "SELECT replica FROM threadline_shard_replicas WHERE bot = :bot", key)))
    # Only an unexpired lease is renewed: past its end another replica may hold it already.
    renewed = {int(row[0]) for row in conn.rows(
        "UPDATE threadline_shard_leases SET lease_until_us = :until WHERE bot = :bot "
        "AND holder = :me AND lease_until_us > :now RETURNING shard_id", key)}
    others = frozenset(int(row[0]) for row in conn.rows(
        "SELECT DISTINCT shard_count FROM threadline_shard_leases WHERE bot = :bot "
        "AND holder IS NOT NULL AND holder <> :me AND lease_until_us > :now "
        "AND shard_count <> :count", {**key, "count": shard_count}))
    share = fair_share(shard_count, replicas, replica)
    claimed: dict[int, str | None] = {}
    if claim and not others and len(renewed) < share:
        claimed = _claim(conn, key, shard_count, share - len(renewed))
    held = frozenset(renewed | set(claimed))
    return ShardRound(held=held, claimed=claimed, surplus=surplus(held, share), replicas=replicas,
                      other_counts=others)


def _claim(conn: SqlRunner, key: dict[str, object], shard_count: int,
           wanted: int) -> dict[int, str | None]:
    """Up to `wanted` free or expired shards, lowest ids first; each with its last holder."""
    for shard in range(shard_count):  # every shard has a row to guard
        conn.rowcount("INSERT INTO threadline_shard_leases (bot, shard_id, shard_count, "
                      "holder, lease_until_us, generation) VALUES (:bot, :shard, :count, NULL, "
                      "0, 0) ON CONFLICT (bot, shard_id) DO NOTHING",
                      {**key, "shard": shard, "count": shard_count})
    free = conn.rows("SELECT shard_id, holder FROM threadline_shard_leases WHERE bot = :bot "
                     "AND shard_id < :count AND (holder IS NULL OR lease_until_us <= :now) "
                     "ORDER BY shard_id", {**key, "count": shard_count})
    claimed: dict[int, str | None] = {}
    for shard, before in free:
        if len(claimed) == wanted:
            break
        taken = conn.rowcount(
            "UPDATE threadline_shard_leases SET holder = :me, lease_until_us = :until, "
            "shard_count = :count, generation = generation + 1 WHERE bot = :bot "
            "AND shard_id = :shard AND (holder IS NULL OR lease_until_us <= :now)",
            {**key, "shard": shard, "count": shard_count})
        if taken == 1:
            claimed[int(shard)] = None if before is None else str(before)
    return claimed


def _release(conn: SqlRunner, bot: str, replica: str, shards: tuple[int, ...]) -> None:
    for shard in sorted(shards):
        conn.rowcount("UPDATE threadline_shard_leases SET holder = NULL, lease_until_us = 0 "
                      "WHERE bot = :bot AND shard_id = :shard AND holder = :me",
                      {"bot": bot, "shard": shard, "me": replica})


def _leave(conn: SqlRunner, bot: str, replica: str) -> None:
    key = {"bot": bot, "me": replica}
    conn.rowcount("UPDATE threadline_shard_leases SET holder = NULL, lease_until_us = 0 "
                  "WHERE bot = :bot AND holder = :me", key)
    conn.rowcount("DELETE FROM threadline_shard_replicas WHERE bot = :bot AND replica = :me",
                  key)


class SqlShardLeases:
    """Shard leases in a `SqlConversationStore`'s database; see the module docstring."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def run_round(self, *, bot: str, replica: str, shard_count: int,
                        lease_seconds: float, claim: bool = True) -> ShardRound:
        done: ShardRound = await self.store.run(
            "renew and claim shard leases", _round, bot, replica, shard_count, lease_seconds,
            claim, write=True)
        return done

    async def release(self, *, bot: str, replica: str, shards: tuple[int, ...]) -> None:
        await self.store.run("release shard leases", _release, bot, replica, shards,
                             write=True)

    async def leave(self, *, bot: str, replica: str) -> None:
        await self.store.run("give up shard leases", _leave, bot, replica, write=True)
