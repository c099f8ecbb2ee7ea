"""One replica claiming shards in its own process, for the race scenarios of
`test_shard_leases_race`: `python -m tests.backends.shard_claimer URL REPLICA ROUNDS`.

It waits until the file named by its fourth argument exists, so two of them start together,
runs its rounds back to back, and prints each round's claims as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from threadline.backends import build_backend
from threadline.backends.base import BackendOptions


async def main(url: str, replica: str, rounds: int, go: Path) -> None:
    async with build_backend(url, BackendOptions(busy_timeout=10)) as backend:
        leases = backend.shard_leases
        assert leases is not None
        await backend.history.get("warm-up", limit=1)  # schema ready before the race
        print(json.dumps({"ready": replica}), flush=True)
        while not go.exists():  # noqa: ASYNC110, ASYNC240 - the test writes it
            await asyncio.sleep(0.001)
        for _ in range(rounds):
            done = await leases.run_round(bot="discord:1", replica=replica, shard_count=4,
                                          lease_seconds=60)
            print(json.dumps({"claimed": sorted(done.claimed), "held": sorted(done.held)}),
                  flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])))
