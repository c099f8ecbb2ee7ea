"""Where a plain turn's time goes on PostgreSQL: the database's round trips, and the rest.

Runs `versus.py`'s PostgreSQL turns (10 conversations x 40 turns through `Threadline.say`, an
instant model, a fresh schema) and prints, per turn:
- the event loop's time waiting in `select` (for the database's answers, and for threads)
  beside its time running (Python, and the socket calls that send each statement);
- every statement the asyncpg connections ran, BEGIN and COMMIT included (autocommit sends
  neither): how many a turn, and how long each took from its send to its answer. The turn's
  background work (releasing the lock, reply records, the vector index) is counted with it.

    THREADLINE_TEST_PG_URL=postgresql+asyncpg://... .venv/bin/python bench/pg_turn_split.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncpg.connection import Connection  # noqa: E402
from versus import our_pg_turns  # noqa: E402

import threadline  # noqa: E402

waits: dict[str, list[float]] = defaultdict(list)
counting = {"on": False, "idle": 0.0}


def timed(cls: type, method: str, label: Callable[..., str | None]) -> None:
    """Time `cls.method` (a coroutine) under `label(self, *args)` while a turn runs."""
    sent = getattr(cls, method)

    async def timing(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = label(self, *args)
        started = time.perf_counter()
        try:
            return await sent(self, *args, **kwargs)
        finally:
            if name is not None and counting["on"]:
                waits[name].append(time.perf_counter() - started)

    setattr(cls, method, timing)


def statement(_: Any, sql: str, *args: Any) -> str:
    return " ".join(sql.split())[:72]


# A statement with parameters goes through `_execute`; one without (BEGIN, COMMIT, a ping)
# through `execute` alone.
timed(Connection, "_execute", statement)
timed(Connection, "execute", lambda self, sql, *args: None if args else statement(self, sql))


def watch_select() -> None:
    """Add the loop's time inside `select` to the count: its idle time."""
    selector: Any = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
    select = selector.select

    def idling(timeout: float | None = None) -> Any:
        started = time.perf_counter()
        try:
            return select(timeout)
        finally:
            if counting["on"]:
                counting["idle"] += time.perf_counter() - started

    selector.select = idling


def count_turns() -> None:
    say = threadline.Threadline.say

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counting["on"] = True
        try:
            return await say(self, *args, **kwargs)
        finally:
            counting["on"] = False

    threadline.Threadline.say = counted  # type: ignore[method-assign]


async def main() -> None:
    timings = await our_pg_turns(lambda: (watch_select(), count_turns()))
    if timings is None:
        return
    turns, total = len(timings), sum(timings)
    print(f"{turns} turns   p50 {statistics.median(timings) * 1000:.2f} ms   mean "
          f"{total / turns * 1000:.2f} ms")
    print(f"loop waiting in select {counting['idle'] / turns * 1000:.2f} ms a turn, running "
          f"{(total - counting['idle']) / turns * 1000:.2f} ms a turn")
    rows = sorted(((sum(v), len(v), k) for k, v in waits.items()), reverse=True)
    print(f"round trips {sum(r[1] for r in rows) / turns:.2f} a turn, "
          f"{sum(r[0] for r in rows) / turns * 1000:.2f} ms a turn awaited (tasks overlap)")
    for spent, count, label in rows[:25]:
        print(f"  {spent / turns * 1000:6.2f} ms  {count / turns:5.2f} a turn  "
              f"{spent / count * 1000:5.2f} ms each  {label}")


if __name__ == "__main__":
    asyncio.run(main())
