"""The README's library program runs as written: two agents sharing one SQLite history both
answer, from what the history kept (the order number said in an earlier turn)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def library_block() -> str:
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Threadline as a library", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, "the README's library section has no python block"
    return found.group(1)


def test_the_readme_library_program_answers_from_the_shared_history(tmp_path: Path) -> None:
    program = tmp_path / "bot.py"
    program.write_text(library_block(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answers = dict(line.split(": ", 1) for line in done.stdout.splitlines()
                   if line.startswith(("ada: ", "bob: ")))
    assert set(answers) == {"ada", "bob"}
    assert all("1042" in text for text in answers.values())
    with sqlite3.connect(tmp_path / "bot.db") as db:
        stored = [row[0] for row in db.execute(
            "SELECT participant_id FROM threadline_messages ORDER BY sequence")]
    assert stored.count("sam") == 2
    assert {"ada", "bob"} <= set(stored)


def test_the_readme_transcript_shows_what_the_offline_model_says(tmp_path: Path) -> None:
    """The terminal transcript's answers are the offline model's words today: no timestamps
    the output no longer has."""
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    said = [line for line in readme.splitlines() if line.startswith("support> [offline model]")]
    assert said, "the README shows no offline answer"
    assert not [line for line in said if re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d", line)]
