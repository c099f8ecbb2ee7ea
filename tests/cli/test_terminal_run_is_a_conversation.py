"""`threadline run` in a terminal is a conversation, like the demo: a line addressed to nobody
gets the hint, the console's address is printed, and log lines go to a file instead of into
the chat."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from tests.cli.helpers import THREADLINE

CONFIG = """\
store:
  url: sqlite:///{db}
log:
  level: info
ops:
  port: 0
"""


def talk(cwd: Path, typed: bytes, limit: float = 90) -> tuple[str, str]:
    """Run `threadline run` on a pseudo-terminal, type `typed`, return (terminal, stderr)."""
    controller, terminal = pty.openpty()
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("ANTHROPIC_API_KEY", "THREADLINE_LOG_LEVEL")}
    process = subprocess.Popen([str(THREADLINE), "run"], cwd=cwd, stdin=terminal,
                               stdout=terminal, stderr=subprocess.PIPE, env=environment)
    os.close(terminal)
    os.write(controller, typed)
    screen = b""
    deadline = time.monotonic() + limit
    try:
        while process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    screen += os.read(controller, 65536)
                except OSError:
                    break
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    assert process.stderr is not None
    return screen.decode(errors="replace"), process.stderr.read().decode()


def test_hint_console_address_and_quiet_logs(tmp_path: Path) -> None:
    (tmp_path / "threadline.yaml").write_text(CONFIG.format(db=tmp_path / "bot.db"),
                                              encoding="utf-8")
    screen, err = talk(tmp_path, b"hello anyone\n@support hi, I use the Pro plan\n\x04")
    assert "you> " in screen
    assert "    (nobody was addressed: start with @support)" in screen
    assert "support> [offline model]" in screen
    assert screen.index("(nobody was addressed") < screen.index("support> ")
    console = [line for line in err.splitlines() if "what each agent saw" in line]
    assert len(console) == 1 and console[0].startswith(
        "threadline: what each agent saw, reply by reply: http://127.0.0.1:")
    assert console[0].endswith("/console/")
    log_file = tmp_path / "threadline.log"
    assert f"threadline: info logs go to {log_file} while you chat here" in err
    # Not one log line in the chat or on stderr: they are in the file.
    assert '"event"' not in screen + err and "[info" not in screen + err
    logged = log_file.read_text(encoding="utf-8")
    assert '"event": "runtime.started"' in logged
    assert '"event": "turn.done"' in logged  # the turn's own line
