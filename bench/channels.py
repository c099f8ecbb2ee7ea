"""Every channel end to end against its fake platform: one script per platform, run in turn.

Each prints events per second a single process sustains (event in -> reply posted -> both
turns stored) and p50/p99 added latency. Run one platform alone with its own script and
flags (bench/channel_slack.py, bench/channel_telegram.py, bench/channel_discord.py,
bench/channel_http.py, which measures Slack's HTTP mode beside it; bench/channel_whatsapp.py;
bench/channel_teams.py; bench/channel_matrix.py: Matrix beside Slack, through a team on the
instant model). Name platforms to run only those, in the order given:

    .venv/bin/python bench/channels.py slack teams

    .venv/bin/python bench/channels.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PLATFORMS = ("channel_slack.py", "channel_telegram.py", "channel_discord.py",
             "channel_http.py", "channel_whatsapp.py", "channel_teams.py", "channel_matrix.py")


def main() -> int:
    folder = Path(__file__).resolve().parent
    failed = 0
    chosen = [f"channel_{name}.py" for name in sys.argv[1:]] or list(PLATFORMS)
    unknown = [script for script in chosen if script not in PLATFORMS]
    if unknown:
        print(f"unknown platform(s): {', '.join(unknown)}; expected some of "
              f"{', '.join(p.removeprefix('channel_').removesuffix('.py') for p in PLATFORMS)}")
        return 2
    for script in chosen:
        print(f"== {script}", flush=True)
        done = subprocess.run([sys.executable, str(folder / script)], check=False)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
