"""A turn's walk through Threadline, before and after a change, alternated in one run.

Each side is a checkout (this one, and the one `--before` names: a `git worktree add DIR REV`
of the revision to compare with). Each run is a child process with that checkout first on the
path: 10 conversations x 40 turns through `Team.handle` with an instant scripted model on a
SQLite file, every turn recorded in the inbox, owned, walked through the stages, answered and
stored. Printed: p50 and p99 ms per turn for each side, for each of `--rounds` alternations.

    git worktree add /tmp/before bd39be8
    .venv/bin/python bench/turn_walk.py --before /tmp/before
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

ONE_RUN = """
import asyncio, statistics, tempfile, time
from pathlib import Path
from tests.interceptors.scripted import ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.team import Team

async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with SqlConversationStore(f"sqlite+aiosqlite:///{Path(folder) / 'b.db'}") as store:
            agent = Agent(name="support", conversation_history=store, provider=ScriptedModel())
            team = Team([agent])
            times = []
            for turn in range(40):
                for conversation in range(10):
                    message = say(f"@support question {turn}", conversation_id=f"c{conversation}")
                    start = time.perf_counter()
                    await team.handle(message)
                    times.append((time.perf_counter() - start) * 1000)
            await team.stop()
            await agent.close()
    times.sort()
    print(f"{statistics.median(times):.2f} {times[int(len(times) * 0.99)]:.2f}")

asyncio.run(main())
"""


def one_run(checkout: Path) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", ONE_RUN], cwd=checkout, check=True,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(checkout)})
    p50, p99 = done.stdout.split()[-2:]
    return float(p50), float(p99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="a checkout of the revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("per-turn, ms (instant model, SQLite, 10 conversations x 40 turns)")
    for round_number in range(1, args.rounds + 1):
        for name, checkout in (("before", args.before.resolve()), ("after", HERE)):
            p50, p99 = one_run(checkout)
            print(f"round {round_number} {name:6} p50 {p50:5.2f}  p99 {p99:5.2f}")


if __name__ == "__main__":
    main()
