"""`docs/tools.md`'s first example is true: with its `threadline.yaml` and the page's tool
module, `threadline run` on the offline model answers the typed lines of its transcript as the
page shows (a tool call that waits for `/approve`, a schedule, a tool it does not have), ids
and times aside."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

from tests.cli.helpers import THREADLINE
from tests.inspector.helpers import child_environment
from tests.test_docs_tools import block

# What differs from run to run: approval and schedule ids, the schedule's time.
_VARIES = re.compile(r"ap-[0-9a-f]+|\b[0-9a-f]{12}\b|\d{4}-\d\d-\d\d \d\d:\d\d")


def normalised(line: str) -> str:
    return _VARIES.sub("*", line)


def test_the_offline_transcript_is_what_run_prints(tmp_path: Path) -> None:
    (tmp_path / "shipping.py").write_text(block("python"), encoding="utf-8")
    (tmp_path / "threadline.yaml").write_text(
        block("yaml").replace("stdin: auto", "stdin: true"), encoding="utf-8")
    transcript = block("console").splitlines()
    process = subprocess.Popen(
        [str(THREADLINE), "run"], cwd=tmp_path, env=child_environment({}), text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    printed: list[str] = []
    approval = ""
    hung = threading.Timer(120, process.kill)  # a line never printed fails, not hangs
    hung.start()
    try:
        for line in transcript:
            if line.startswith("you> "):
                typed = re.sub(r"ap-[0-9a-f]+", approval, line.removeprefix("you> "))
                process.stdin.write(typed + "\n")
                process.stdin.flush()
                continue
            printed.append(process.stdout.readline().rstrip("\n"))
            asked = re.search(r"/approve (ap-[0-9a-f]+) ", printed[-1])
            approval = asked.group(1) if asked else approval
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        hung.cancel()
        if process.returncode is None:
            process.kill()
            process.wait()
    shown = [normalised(line) for line in transcript if not line.startswith("you> ")]
    assert [normalised(line) for line in printed] == shown
