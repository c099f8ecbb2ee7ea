"""`threadline run` replicas sharing a fake Discord's shards: started, asked what they hold,
waited on until the shards are spread. Used by the replica scenarios and `bench/discord_shards`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.fakes.discord_gateway import FakeDiscord
from tests.launch import spawn
from tests.ports import free_port
from tests.runtime.test_run_kill9_answers_everything import logged, until


@dataclass
class Replica:
    name: str
    process: asyncio.subprocess.Process
    log: Path
    ops_port: int

    async def holds(self) -> list[int]:
        """The shards this replica's /readyz says it holds."""
        async with aiohttp.ClientSession() as http, http.get(
                f"http://127.0.0.1:{self.ops_port}/readyz") as response:
            body = await response.json()
        return list(body.get("holds", {}).get("channel:discord", {}).get("shards", []))

    async def stop(self) -> None:
        """SIGTERM, and SIGKILL if it has not ended after 30 s."""
        if self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(30):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def start_replica(folder: Path, name: str, *, store_url: str, discord: FakeDiscord,
                        shards: int | str | None, lease_seconds: float,
                        model_url: str | None) -> Replica:
    """`threadline run` on a config whose Discord channel shares `shards` (None: one
    connection, no shards); the offline model answers when `model_url` is None. Returns once
    the replica says it started."""
    port = free_port()
    sharding = (f"    shards: {shards}\n    shard_lease_seconds: {lease_seconds}\n"
                if shards is not None else "")
    model = f"""\
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {model_url}
""" if model_url is not None else ""
    config = folder / f"{name}.yaml"
    config.write_text(f"""\
store:
  url: {store_url}
{model}log:
  format: json
ops:
  port: {port}
channels:
  discord:
    type: discord
    token: ${{DISCORD_BOT_TOKEN}}
    api_base_url: {discord.api_base_url}
    gateway_url: {discord.gateway_url}
{sharding}    streaming: false
agents:
  support:
    system_prompt: You help.
    channels: [discord]
""", encoding="utf-8")
    log = folder / f"{name}.log"
    sink = log.open("wb")
    env = {"PATH": str(Path(sys.executable).parent),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "DISCORD_BOT_TOKEN": discord.token}
    if model_url is not None:
        env["ANTHROPIC_API_KEY"] = "test-key"
    process = await spawn("run", str(config), "--no-input", cwd=folder, env=env,
        stdout=subprocess.DEVNULL, stderr=sink)
    sink.close()
    await until(lambda: logged(log, "runtime.started") or process.returncode is not None)
    assert process.returncode is None, log.read_text()
    return Replica(name, process, log, port)


async def holders(replicas: list[Replica]) -> dict[int, str]:
    """Which live replica holds each shard, by their /readyz; fails on a shard held twice."""
    held: dict[int, str] = {}
    for replica in replicas:
        if replica.process.returncode is not None:
            continue
        for shard in await replica.holds():
            assert shard not in held, f"shard {shard}: {held[shard]} and {replica.name}"
            held[shard] = replica.name
    return held


async def settle(discord: FakeDiscord, replicas: list[Replica], *, shards: int,
                 spread: list[int], within: float) -> dict[int, str]:
    """Wait until every shard is held and connected once, the live replicas holding `spread`
    shards each (fewest first); who holds each."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        held = await holders(replicas)
        if (sorted(Counter(held.values()).values()) == spread and len(held) == shards
                and discord.live_shards() == dict.fromkeys(range(shards), 1)):
            return held
        await asyncio.sleep(0.05)
    logs = "\n".join(r.log.read_text()[-2500:] for r in replicas)
    raise AssertionError(f"not settled after {within} s: {await holders(replicas)}, "
                         f"sessions {discord.live_shards()}\n{logs}")
