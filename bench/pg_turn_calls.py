"""How many Python function calls a plain turn costs on PostgreSQL, and in which packages.

A count the machine's load does not change (timings here swing 2x with it): `versus.py`'s
PostgreSQL turns (10 conversations x 40 turns through `Threadline.say`, an instant model, a
fresh schema) under cProfile, the first turn of each conversation left out. A builtin (len,
isinstance, a dict's get) counts for the package that called it.

    THREADLINE_TEST_PG_URL=postgresql+asyncpg://... .venv/bin/python bench/pg_turn_calls.py
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from versus import CONVERSATIONS, our_pg_turns  # noqa: E402

import threadline  # noqa: E402

PACKAGES = ("threadline", "sqlalchemy", "asyncpg", "asyncio", "greenlet", "structlog")
profile = cProfile.Profile()
said = {"turns": 0}


def profile_turns() -> None:
    say = threadline.Threadline.say

    async def profiled(self: Any, *args: Any, **kwargs: Any) -> Any:
        said["turns"] += 1
        if said["turns"] > CONVERSATIONS:
            profile.enable()
        try:
            return await say(self, *args, **kwargs)
        finally:
            profile.disable()

    threadline.Threadline.say = profiled  # type: ignore[method-assign]


def package(filename: str) -> str:
    return next((name for name in PACKAGES if f"/{name}/" in filename or
                 filename.endswith(f"/{name}.py")), "other")


def calls_by_package(stats: pstats.Stats) -> Counter[str]:
    counts: Counter[str] = Counter()
    for (filename, _, _), (_, calls, _, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if filename != "~":
            counts[package(filename)] += calls
            continue
        for (caller, _, _), called in callers.items():  # a builtin: its callers' package
            counts[package(caller)] += called[0] if isinstance(called, tuple) else called
    return counts


async def main() -> None:
    if await our_pg_turns(profile_turns) is None:
        return
    turns = said["turns"] - CONVERSATIONS
    counts = calls_by_package(pstats.Stats(profile))
    print(f"{turns} turns profiled: {sum(counts.values()) / turns:,.0f} Python calls a turn")
    for name, calls in counts.most_common():
        print(f"  {calls / turns:8,.0f}  {name}")


if __name__ == "__main__":
    asyncio.run(main())
