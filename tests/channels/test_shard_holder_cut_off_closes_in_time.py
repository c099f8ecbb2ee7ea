"""A replica cut off from its database closes its shard connections before its leases end.

The holder's rounds go through a proxy to PostgreSQL that stops answering (a hung database, or
a network split): every round then hangs. The holder must close each connection before the
database would let another replica claim the shard, and must stop handling that shard's events
(`holds`); another replica, which reaches the database, claims the shards only after that.
"""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import make_url

from tests.fakes.tcp_proxy import TcpProxy
from threadline.backends import build_backend
from threadline.channels.shard_holder import ShardHolder

BOT = "discord:7"


async def test_a_holder_whose_database_hangs_closes_before_another_may_claim(
        pg_url: str) -> None:
    url = make_url(pg_url)
    proxy = TcpProxy(url.port or 5432)
    await proxy.start()
    through_proxy = url.set(port=proxy.port).render_as_string(hide_password=False)
    opened: dict[int, float] = {}
    closed: dict[int, float] = {}

    async def open_shard(shard: int) -> None:
        opened[shard] = time.monotonic()

    async def close_shard(shard: int) -> None:
        closed[shard] = time.monotonic()

    async with build_backend(through_proxy) as cut_off, build_backend(pg_url) as direct:
        assert cut_off.shard_leases is not None and direct.shard_leases is not None
        holder = ShardHolder(leases=cut_off.shard_leases, bot=BOT, replica="a", shard_count=2,
                             lease_seconds=1.5, open_shard=open_shard, close_shard=close_shard,
                             channel="discord")
        await holder.start()
        assert holder.held == (0, 1) and sorted(opened) == [0, 1] and holder.holds(0)

        proxy.silent = True  # new connections hang; the open ones are cut
        await proxy.stop()
        await proxy.start()
        claimed_at = None
        async with asyncio.timeout(20):
            while claimed_at is None:
                taken = await direct.shard_leases.run_round(
                    bot=BOT, replica="b", shard_count=2, lease_seconds=30)
                if taken.held == {0, 1}:
                    claimed_at = time.monotonic()
                    assert taken.claimed == {0: "a", 1: "a"}  # taken over, not released
                await asyncio.sleep(0.02)

        assert sorted(closed) == [0, 1], "the cut-off holder never closed its shards"
        assert all(closed[shard] < claimed_at for shard in (0, 1))
        assert not holder.holds(0) and not holder.holds(1) and holder.held == ()
        proxy.silent = False
        await holder.stop()
    await proxy.stop()
