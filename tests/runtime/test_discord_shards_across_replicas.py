"""Three `threadline run` replicas on one PostgreSQL database share a Discord bot's four shards.

The fake gateway recommends four shards and routes each server's events to its shard (DMs to
shard 0). Each replica holds its share (2, 1 and 1), each message reaches exactly one
connection, the one of its shard, and is answered once, by the replica holding that shard
(each replica has its own model server, which signs the answer). A replica killed with
`kill -9` has its shards taken over by the other two within the bound the lease sets, and
their messages are answered again, those said while nobody held the shard too (read from the
channel's history). At no moment are two sessions connected for one shard.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.discord_gateway import FakeDiscord, FakeUser, shard_for
from tests.runtime.discord_replicas import Replica, settle, start_replica
from tests.runtime.test_run_kill9_answers_everything import logged, until

pytestmark = pytest.mark.postgres

SHARDS = 4
LEASE_SECONDS = 3.0
# The lease runs out (3 s), one round of the others (0.6 s), then a gateway connect; generous,
# as the machine running the tests is shared.
TAKEOVER_BOUND = 1.2 * LEASE_SECONDS + 10.0
_TAG = re.compile(r"q\d+")


def signed_by(replica: str) -> Callable[[dict[str, Any]], Reply]:
    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        words = last if isinstance(last, str) else " ".join(
            block.get("text", "") for block in last if isinstance(block, dict))
        return text(f"answer {_TAG.findall(words)[-1]} from {replica}")
    return answer


@dataclass
class Rig:
    discord: FakeDiscord
    ada: FakeUser
    rooms: list[str]  # one text channel per shard, in a server of that shard
    dm: str
    replicas: dict[str, Replica]

    async def settle(self, *, spread: list[int], within: float) -> dict[int, str]:
        return await settle(self.discord, list(self.replicas.values()), shards=SHARDS,
                            spread=spread, within=within)

    async def ask(self, room: str, tag: str) -> str:
        sent = await self.discord.deliver_message(
            room, author=self.ada, content=f"<@{self.discord.bot.id}> question {tag}")
        return str(sent["id"])

    def answers(self) -> Counter[str]:
        return Counter(str(post["content"]) for post in self.discord.posts)

    async def answered(self, *tags: str) -> None:
        try:
            await until(lambda: all(any(a.startswith(f"answer {t} ") for a in self.answers())
                                    for t in tags), within=30)
        except TimeoutError:
            raise AssertionError(f"answers so far: {self.answers()}\n{self.logs()}") from None

    def logs(self) -> str:
        return "\n".join(r.log.read_text()[-2500:] for r in self.replicas.values())


async def held_by(replicas: list[Replica]) -> set[int]:
    return {shard for replica in replicas for shard in await replica.holds()}


@pytest.fixture
async def rig(pg_url: str, tmp_path: Path) -> AsyncIterator[Rig]:
    names = ("a", "b", "c")
    models = [FakeAnthropic() for _ in names]
    async with FakeDiscord(recommended_shards=SHARDS) as discord:
        for model, name in zip(models, names, strict=True):
            await model.__aenter__()
            model.responder = signed_by(name)
        ada = discord.add_user("ada")
        guilds = [discord.add_guild(name=f"server {n}", shard=(n, SHARDS))
                  for n in range(SHARDS)]
        rooms = [discord.add_text_channel(guild, name="general") for guild in guilds]
        for guild in guilds:
            discord.add_member(guild, ada)
        made = Rig(discord, ada, rooms, discord.add_dm(ada), {})
        try:
            for name, model in zip(names, models, strict=True):
                made.replicas[name] = await start_replica(
                    tmp_path, name, store_url=pg_url, discord=discord, shards="auto",
                    lease_seconds=LEASE_SECONDS, model_url=model.url)
            yield made
        finally:
            for replica in made.replicas.values():
                await replica.stop()
            for model in models:
                await model.__aexit__(None, None, None)


async def test_three_replicas_share_four_shards_and_a_killed_ones_are_taken_over(
        rig: Rig) -> None:
    holders = await rig.settle(spread=[1, 1, 2], within=30)  # each its fair share

    # One question per server and one DM: each reaches its shard's one connection and is
    # answered once, by the replica holding that shard.
    asked = {f"q{n}": await rig.ask(room, f"q{n}") for n, room in enumerate(rig.rooms)}
    asked["q9"] = await rig.ask(rig.dm, "q9")
    await rig.answered(*asked)
    shard_of_tag = {f"q{n}": n for n in range(SHARDS)} | {"q9": 0}
    for tag, message_id in asked.items():
        [dispatch] = [d for d in rig.discord.dispatched if d.message_id == message_id]
        assert dispatch.shard == shard_of_tag[tag]
        assert rig.answers()[f"answer {tag} from {holders[shard_of_tag[tag]]}"] == 1
    assert shard_for(None, SHARDS) == 0

    # The replica holding two shards dies without a word.
    [busiest] = [name for name, n in Counter(holders.values()).items() if n == 2]
    orphaned = sorted(s for s, name in holders.items() if name == busiest)
    killed = rig.replicas[busiest]
    killed.process.send_signal(signal.SIGKILL)
    await killed.process.wait()
    died = time.monotonic()
    # Said while nobody holds the shard: Discord sends it to no connection, ever. The replica
    # that takes the shard over reads it from the channel's history (`channels.catch_up`).
    unheld = {f"q{20 + s}": await rig.ask(rig.rooms[s], f"q{20 + s}") for s in orphaned}
    after = await rig.settle(spread=[2, 2], within=TAKEOVER_BOUND)
    took = time.monotonic() - died
    assert busiest not in after.values()
    # The survivors say whose shards they took; unless, on a loaded machine, the dead one had
    # let them go itself just before (a round late: `shards.lost`), and they were free.
    assert any(logged(r.log, "shards.taken_over") for r in rig.replicas.values()
               if r is not killed) or logged(killed.log, "shards.lost"), rig.logs()

    again = {f"q{10 + s}": await rig.ask(rig.rooms[s], f"q{10 + s}") for s in orphaned}
    await rig.answered(*again, *unheld)
    for tags in (again, unheld):
        for tag, shard in zip(tags, orphaned, strict=True):
            assert rig.answers()[f"answer {tag} from {after[shard]}"] == 1
    assert max(rig.answers().values()) == 1, rig.answers()
    # Never two sessions for one shard: not at start, not while rebalancing, not at takeover.
    assert rig.discord.most_sessions_per_shard == dict.fromkeys(range(SHARDS), 1)
    print(json.dumps({"takeover_seconds": round(took, 2)}))


async def test_a_paused_replica_answers_nothing_of_the_shards_taken_from_it(rig: Rig) -> None:
    """`kill -STOP` longer than a lease (a stopped VM, a long GC): its sockets stay open, so
    Discord (and the fake) still sends it its shards' events, while another replica takes the
    shards over. Woken, it finds its deadline passed: it drops what it read meanwhile, closes
    those connections, and then takes its fair share again."""
    holders = await rig.settle(spread=[1, 1, 2], within=30)
    [paused_name] = [name for name, n in Counter(holders.values()).items() if n == 2]
    taken = sorted(s for s, name in holders.items() if name == paused_name)
    paused = rig.replicas[paused_name]
    paused.process.send_signal(signal.SIGSTOP)
    try:
        others = [r for r in rig.replicas.values() if r is not paused]
        async with asyncio.timeout(TAKEOVER_BOUND):
            while not set(taken) <= await held_by(others):  # noqa: ASYNC110 - they claim it
                await asyncio.sleep(0.1)
        await until(lambda: all(rig.discord.live_shards()[s] == 2 for s in taken), within=15)
        # Both sessions of each taken shard receive this; only the new holder may answer.
        asked = {f"q{20 + s}": await rig.ask(rig.rooms[s], f"q{20 + s}") for s in taken}
        await rig.answered(*asked)
    finally:
        paused.process.send_signal(signal.SIGCONT)
    after = await rig.settle(spread=[1, 1, 2], within=TAKEOVER_BOUND + 10)
    await asyncio.sleep(1.0)  # what the woken replica read while paused has been handled
    for tag in asked:
        [answer] = [a for a in rig.answers() if a.startswith(f"answer {tag} ")]
        assert not answer.endswith(f"from {paused_name}"), answer
    assert max(rig.answers().values()) == 1, rig.answers()
    assert logged(paused.log, "shards.lost") and set(after.values()) == set(rig.replicas)
