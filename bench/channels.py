"""Every channel end to end against its fake platform: one script per platform, run in turn.

Each prints events per second a single process sustains (event in -> reply posted -> both
turns stored) and p50/p99 added latency. Run one platform alone with its own script and
flags (bench/channel_slack.py, bench/channel_telegram.py, bench/channel_discord.py,
bench/channel_matrix.py: Matrix beside Slack, through a team on the instant model).

    .venv/bin/python bench/channels.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PLATFORMS = ("channel_slack.py", "channel_telegram.py", "channel_discord.py",
             "channel_matrix.py")


def main() -> int:
    folder = Path(__file__).resolve().parent
    failed = 0
    for script in PLATFORMS:
        print(f"== {script}", flush=True)
        done = subprocess.run([sys.executable, str(folder / script)], check=False)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
