"""How long the `threadline` command takes to start: `--version`, `--help`, and a command's
own `--help` (which imports that command's module), as a person at a shell waits for them.

Each is run as a fresh process several times; the median and the slowest are printed, next to
`python -c pass` (the interpreter's own start) for scale.

    .venv/bin/python bench/cli_start.py --runs 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

THREADLINE = Path(sys.executable).with_name("threadline")
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "threadline --version": [str(THREADLINE), "--version"],
    "threadline --help": [str(THREADLINE), "--help"],
    "threadline check --help": [str(THREADLINE), "check", "--help"],
    "threadline run --help": [str(THREADLINE), "run", "--help"],
}


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"{'command':<26} {'median ms':>10} {'max ms':>8}  ({args.runs} runs each)")
    for name, argv in CASES.items():
        times = [timed(argv) for _ in range(args.runs)]
        print(f"{name:<26} {statistics.median(times) * 1000:>10.0f} {max(times) * 1000:>8.0f}")


if __name__ == "__main__":
    main()
