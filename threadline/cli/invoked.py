"""How a person calls the `threadline` command again from where they are, for the hints the
commands print: `threadline` when it is on the PATH, otherwise the path it was started by
(`.venv/bin/threadline` after `make demo`, which does not activate the virtualenv)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

NAME = "threadline"


def command() -> str:
    """`threadline`, or the path to use instead when that name would not be found."""
    started = Path(sys.argv[0])
    if started.name != NAME:
        return NAME  # `python -m threadline`, or called from code
    found = shutil.which(NAME)
    if found is not None and Path(found).resolve() == started.resolve():
        return NAME
    return str(started)
