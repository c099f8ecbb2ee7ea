"""How late a due schedule fires: seconds from its due time until its turn is in the inbox.

N schedules (default 10,000) fall due spread evenly over `--spread` seconds; the real
`Scheduler` (wall clock) claims them and records each firing's turn in the inbox, as in
`threadline run`. Printed: p50 and p99 lateness, the slowest, and how many fired (each must
fire exactly once), on SQLite, on PostgreSQL (with THREADLINE_TEST_PG_URL), and with two
schedulers on PostgreSQL (two replicas: separate connection pools claiming the same rows).

    .venv/bin/python bench/schedules.py              # 10,000 schedules over 20 s
    .venv/bin/python bench/schedules.py --quick      # 1,000 over 5 s

Fresh stores each run (a temporary SQLite file; a new PostgreSQL schema). Figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import percentile  # noqa: E402
from store import ensure_pg_schema  # noqa: E402

from threadline.backends.sql import SqlConversationStore  # noqa: E402
from threadline.backends.sql.schedules import SqlScheduleBook  # noqa: E402
from threadline.log import configure_logging  # noqa: E402
from threadline.schedules import Schedule, Scheduler  # noqa: E402


def schedules_due(count: int, spread: float, start: datetime) -> list[Schedule]:
    step = spread / count
    return [Schedule(conversation_id=f"local:bench-{n}", agent="support", kind="message",
                     text=f"post {n}", due_at=start + timedelta(seconds=n * step),
                     timezone="UTC", created_by="bench", channel="local",
                     origin={"channel_type": "local", "channel_id": f"bench-{n}"})
            for n in range(count)]


async def run(urls: list[str], count: int, spread: float) -> dict[str, Any]:
    """Lateness of every firing with one scheduler per URL (several: replicas)."""
    stores = [SqlConversationStore(url, pool_size=5) for url in urls]
    for store in stores:
        await store.__aenter__()
    # Due only once all are in the book (adding 10,000 takes seconds on PostgreSQL here).
    start = datetime.now(UTC) + timedelta(seconds=3 + count / 1000)
    plan = schedules_due(count, spread, start)
    due = {s.conversation_id: s.due_at for s in plan}
    await SqlScheduleBook(stores[0]).add_many(plan)
    if datetime.now(UTC) > start:
        print(f"  (adding took past the first due time by "
              f"{(datetime.now(UTC) - start).total_seconds():.1f} s: raise the lead)")
    late: list[float] = []
    woken: Counter[str] = Counter()
    all_fired = asyncio.Event()

    def wake(conversation_id: str) -> None:
        woken[conversation_id] += 1
        if len(woken) == count:
            all_fired.set()
        moment = due[conversation_id]
        assert moment is not None
        late.append((datetime.now(UTC) - moment).total_seconds())

    schedulers = [Scheduler(SqlScheduleBook(store), wake=wake) for store in stores]
    began = time.perf_counter()
    for scheduler in schedulers:
        scheduler.start()
    try:
        async with asyncio.timeout(spread + 120):
            await all_fired.wait()
        await asyncio.sleep(1.0)  # any double claim would show now
    finally:
        for scheduler in schedulers:
            await scheduler.stop()
        for store in stores:
            await store.close()
    return {"fired": len(woken), "doubled": sum(1 for n in woken.values() if n > 1),
            "p50": percentile(late, 0.5), "p99": percentile(late, 0.99), "max": max(late),
            "seconds": time.perf_counter() - began}


def report(label: str, figures: dict[str, Any]) -> None:
    print(f"{label:<34} fired {figures['fired']:>6,}  doubled {figures['doubled']}  "
          f"late p50 {figures['p50']:.3f} s  p99 {figures['p99']:.3f} s  "
          f"max {figures['max']:.3f} s", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--spread", type=float, default=20.0,
                        help="seconds over which the schedules fall due")
    parser.add_argument("--quick", action="store_true", help="1,000 schedules over 5 s")
    args = parser.parse_args()
    count, spread = (1_000, 5.0) if args.quick else (args.count, args.spread)
    configure_logging("warning")  # a console line per firing would be measured too
    print(f"{count:,} schedules due over {spread:g} s ({count / spread:,.0f} a second)")
    with tempfile.TemporaryDirectory() as folder:
        report("SQLite, one process", await run([f"sqlite:///{folder}/bench.db"], count, spread))
    pg = os.environ.get("THREADLINE_TEST_PG_URL")
    if not pg:
        print("PostgreSQL: set THREADLINE_TEST_PG_URL to measure it")
        return
    for replicas in (1, 2):
        schema = f"bench_schedules_{uuid.uuid4().hex[:8]}"
        await ensure_pg_schema(pg, schema)
        url = f"{pg}?search_path={schema}"
        report(f"PostgreSQL, {replicas} replica(s)", await run([url] * replicas, count, spread))


if __name__ == "__main__":
    asyncio.run(main())
