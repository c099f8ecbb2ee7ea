"""What an eval case costs to start and to run offline: a case's store opened fresh (created
and migrated) against a copy of one migrated database (what `threadline eval` does), side by
side in one run, then the five documented cases run as `threadline eval` runs them. Figures
only, no assertions.

    .venv/bin/python bench/eval_cases.py            # 5 rounds of each store start
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadline.backends import BackendOptions, build_backend  # noqa: E402
from threadline.config import load_settings  # noqa: E402
from threadline.evals.cases import load_cases  # noqa: E402
from threadline.evals.running import FreshStores  # noqa: E402
from threadline.evals.suite import Config, run_suite  # noqa: E402
from threadline.log import configure_logging  # noqa: E402


async def fresh_open(folder: Path) -> float:
    started = time.perf_counter()
    async with build_backend(f"sqlite:///{folder / 'fresh.db'}", BackendOptions()):
        pass
    return time.perf_counter() - started


async def copied_open(stores: FreshStores, folder: Path) -> float:
    started = time.perf_counter()
    async with stores.backend(folder):
        pass
    return time.perf_counter() - started


async def main(rounds: int) -> None:
    fresh: list[float] = []
    copied: list[float] = []
    async with FreshStores() as stores:
        for _ in range(rounds):  # alternated, so both see the same machine
            with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
                fresh.append(await fresh_open(Path(a)))
                copied.append(await copied_open(stores, Path(b)))
    f, c = statistics.median(fresh), statistics.median(copied)
    print(f"case store start, median of {rounds}: fresh {f * 1000:.0f} ms, copied "
          f"{c * 1000:.0f} ms ({f / c:.0f}x)")
    cases = load_cases(ROOT / "examples/evals/cases.yaml")
    config = Config("threadline.yaml", load_settings(ROOT / "examples/evals/threadline.yaml"))
    for parallel in (1, 4):
        started = time.perf_counter()
        results = await run_suite(cases, [config], cases_dir=ROOT / "examples/evals",
                                  parallel=parallel)
        seconds = sorted(r.answered.seconds for r in results if r.answered is not None)
        print(f"5 documented cases, parallel {parallel}: {time.perf_counter() - started:.2f} s "
              f"wall, per case {', '.join(f'{s:.2f}' for s in seconds)} s "
              f"({sum(r.passed for r in results)}/5 passed)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    configure_logging("warning")
    asyncio.run(main(parser.parse_args().rounds))
