"""Two processes on one PostgreSQL database share one daily budget and never both overspend."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.spend.budget_worker import TOKENS_PER_TURN
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.spend import SpendDay

ROOT = Path(__file__).resolve().parents[2]
CAP = 2000
TURNS = 30  # each: 60 offered, room for 20


async def start_worker(url: str, name: str) -> asyncio.subprocess.Process:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.spend.budget_worker", url, str(CAP), str(TURNS), name,
        cwd=ROOT, env=environment, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    async with asyncio.timeout(60):
        assert (await process.stdout.readline()).strip() == b"ready"
    return process


async def finish(process: asyncio.subprocess.Process) -> dict[str, int]:
    async with asyncio.timeout(120):
        out, err = await process.communicate(b"go\n")
    assert process.returncode == 0, err.decode()[-2000:]
    result: dict[str, int] = json.loads(out.decode().strip().splitlines()[-1])
    return result


@pytest.mark.postgres
async def test_two_processes_spend_one_budget_without_passing_it(pg_url: str) -> None:
    async with SqlConversationStore(pg_url):
        pass  # the schema exists before both workers start
    workers = [await start_worker(pg_url, "support"), await start_worker(pg_url, "billing")]
    first, second = await asyncio.gather(*(finish(w) for w in workers))

    answered = first["answered"] + second["answered"]
    assert first["answered"] > 0 and second["answered"] > 0  # both really took part
    assert first["refused"] > 0 and second["refused"] > 0
    assert answered + first["refused"] + second["refused"] == 2 * TURNS
    async with SqlConversationStore(pg_url) as store:
        [row] = await SqlSpendLedger(store).totals(day=SpendDay().today()[0], scope="conversation")
        turns = await store.get("local:room", limit=1000)
    # The promise is "past the cap by at most one turn". Here each turn's estimate is exact,
    # so the shared reservations land on the cap itself: checking the spend and then adding
    # to it (two steps) lets both processes through at 1,900 and ends at 2,100.
    assert row.spent.tokens == CAP
    assert row.spent.tokens == answered * TOKENS_PER_TURN and row.reserved_tokens == 0
    assert len(turns) == 2 * (2 * TURNS)  # every question and every reply (or refusal) stored
