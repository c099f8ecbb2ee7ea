"""Shard leases under concurrency: two replicas racing never hold one shard, on SQLite (two
processes on one file) and PostgreSQL; a surplus is released to a newcomer; an expired lease
is taken over and never renewed by its late holder; replicas that disagree on the count stop."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from threadline.backends import build_backend
from threadline.backends.base import Backend
from threadline.channels.shard_leases import ShardLeases

BOT = "discord:1"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'leases.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def backends(url: str) -> AsyncIterator[tuple[Backend, Backend]]:
    """Two replicas' backends: separate connections to one database."""
    async with build_backend(url) as first, build_backend(url) as second:
        yield first, second


def leases(backend: Backend) -> ShardLeases:
    assert backend.shard_leases is not None
    return backend.shard_leases


async def test_two_processes_racing_for_four_shards_never_both_take_one(
        url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    claimers = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.backends.shard_claimer", url, replica, "40", str(go),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        for replica in ("a", "b")]
    for claimer in claimers:  # both have opened the database
        assert claimer.stdout is not None
        line = await asyncio.wait_for(claimer.stdout.readline(), 60)
        assert b"ready" in line, (line, await claimer.stderr.read())  # type: ignore[union-attr]
    go.touch()
    outputs = [await claimer.communicate() for claimer in claimers]
    assert all(c.returncode == 0 for c in claimers), [err.decode() for _, err in outputs]
    rounds = [[json.loads(line) for line in out.decode().splitlines()[1:]] for out, _ in outputs]
    claims = Counter(shard for replica in rounds for r in replica for shard in r["claimed"])
    # Leases last a minute here: a shard is claimed once, by one process, whoever wins.
    assert claims == Counter({0: 1, 1: 1, 2: 1, 3: 1}), rounds
    held_a, held_b = (set(replica[-1]["held"]) for replica in rounds)
    assert held_a.isdisjoint(held_b) and held_a | held_b == {0, 1, 2, 3}


async def test_a_replica_that_joins_gets_the_surplus_the_first_releases(
        backends: tuple[Backend, Backend]) -> None:
    a, b = (leases(x) for x in backends)
    first = await a.run_round(bot=BOT, replica="a", shard_count=4, lease_seconds=30)
    assert first.held == {0, 1, 2, 3} and first.replicas == ("a",)
    joined = await b.run_round(bot=BOT, replica="b", shard_count=4, lease_seconds=30)
    assert joined.held == frozenset() and joined.replicas == ("a", "b")  # nothing free yet
    again = await a.run_round(bot=BOT, replica="a", shard_count=4, lease_seconds=30)
    assert again.surplus == (3, 2)  # beyond a's fair share of two
    await a.release(bot=BOT, replica="a", shards=again.surplus)
    taken = await b.run_round(bot=BOT, replica="b", shard_count=4, lease_seconds=30)
    assert taken.held == {2, 3} and taken.claimed == {2: None, 3: None}  # released, not lost
    steady = await a.run_round(bot=BOT, replica="a", shard_count=4, lease_seconds=30)
    assert steady.held == {0, 1} and steady.surplus == ()


async def test_an_expired_lease_is_taken_over_and_its_late_holder_loses_it(
        backends: tuple[Backend, Backend]) -> None:
    a, b = (leases(x) for x in backends)
    await a.run_round(bot=BOT, replica="a", shard_count=2, lease_seconds=0.3)
    blocked = await b.run_round(bot=BOT, replica="b", shard_count=2, lease_seconds=30)
    assert blocked.held == frozenset()
    await asyncio.sleep(0.5)  # a paused: its presence and its leases end
    took = await b.run_round(bot=BOT, replica="b", shard_count=2, lease_seconds=30)
    assert took.held == {0, 1} and took.claimed == {0: "a", 1: "a"} and took.replicas == ("b",)
    late = await a.run_round(bot=BOT, replica="a", shard_count=2, lease_seconds=30)
    assert late.held == frozenset() and late.claimed == {}  # renews nothing, claims nothing


async def test_replicas_that_disagree_on_the_shard_count_claim_nothing_more(
        backends: tuple[Backend, Backend]) -> None:
    a, b = (leases(x) for x in backends)
    await a.run_round(bot=BOT, replica="a", shard_count=2, lease_seconds=30)
    other = await b.run_round(bot=BOT, replica="b", shard_count=4, lease_seconds=30)
    assert other.other_counts == {2} and other.held == frozenset()


async def test_leaving_frees_every_shard_at_once(backends: tuple[Backend, Backend]) -> None:
    a, b = (leases(x) for x in backends)
    await a.run_round(bot=BOT, replica="a", shard_count=3, lease_seconds=30)
    await a.leave(bot=BOT, replica="a")
    after = await b.run_round(bot=BOT, replica="b", shard_count=3, lease_seconds=30)
    assert after.held == {0, 1, 2} and after.replicas == ("b",)
