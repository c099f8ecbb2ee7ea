"""`Threadline(...)` inside a host program: the host's stdout holds only what the host printed,
Threadline's logs go to stderr (warnings only unless `log=` or THREADLINE_LOG_LEVEL asks for
more), a reader that went away does not kill the host, and no lock file is left behind.

The host is the README's example, run as a child process (logging is the process's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inspector.helpers import child_environment
from threadline.errors import ConfigError
from threadline.locks import SingleProcessGuard

HOST = """\
import asyncio
import sys

from threadline import Threadline


async def main() -> None:
    async with Threadline(agents={{"ada": "You are Ada.", "bob": "You are Bob."}},
                          store="sqlite:///bot.db", model="offline"{log}) as app:
        await app.say("room", "my order number is 1042", user="sam")
        for reply in await app.say("room", "@ada @bob what was my order number?", user="sam"):
            print(f"{{reply.agent_name}}: {{reply.text}}")

asyncio.run(main())
"""


def run_host(folder: Path, *, log: str = "", env: dict[str, str] | None = None,
             stdout: int = subprocess.PIPE, stderr: int = subprocess.PIPE
             ) -> subprocess.CompletedProcess[str]:
    (folder / "host.py").write_text(HOST.format(log=log), encoding="utf-8")
    return subprocess.run([sys.executable, "host.py"], cwd=folder, text=True, timeout=120,
                          env=child_environment(env or {}), stdout=stdout, stderr=stderr,
                          check=False)


def events(stderr: str) -> list[str]:
    found = []
    for line in stderr.splitlines():
        try:
            found.append(json.loads(line)["event"])
        except ValueError:
            continue
    return found


def test_the_hosts_stdout_is_its_own_and_no_file_is_left(tmp_path: Path) -> None:
    done = run_host(tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["ada", "bob"]
    assert done.stderr == ""  # nothing went wrong, so nothing was worth a warning
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.db", "host.py"]


def test_log_and_the_environment_raise_the_level_on_stderr(tmp_path: Path) -> None:
    asked = run_host(tmp_path, log=', log={"level": "info"}')
    assert asked.returncode == 0, asked.stderr
    assert len(asked.stdout.splitlines()) == 2
    assert events(asked.stderr).count("turn.done") == 2  # ada and bob
    assert "inspector.recorded" not in events(asked.stderr)  # a debug event

    by_environment = run_host(tmp_path, env={"THREADLINE_LOG_LEVEL": "debug"})
    assert by_environment.returncode == 0, by_environment.stderr
    assert "inspector.recorded" in events(by_environment.stderr)
    assert len(by_environment.stdout.splitlines()) == 2

    quieted = run_host(tmp_path, log=', log={"level": "info"}',
                       env={"THREADLINE_LOG_LEVEL": "error"})
    assert quieted.returncode == 0 and quieted.stderr == ""


def test_a_reader_that_went_away_does_not_kill_the_host(tmp_path: Path) -> None:
    # `| head -0`, then `2>&1 | head -0`: the pipe's reader is gone before anything is logged.
    host = HOST.format(log=', log={"level": "info"}').replace(
        'print(f"{reply.agent_name}: {reply.text}")',
        'open("replies.txt", "a").write(f"{reply.agent_name}\\n")')
    (tmp_path / "host.py").write_text(host, encoding="utf-8")
    for streams in ({"stdout"}, {"stdout", "stderr"}):
        reader, writer = os.pipe()
        os.close(reader)
        try:
            done = subprocess.run(
                [sys.executable, "host.py"], cwd=tmp_path, timeout=120, text=True,
                env=child_environment({}), check=False,
                stdout=writer, stderr=writer if "stderr" in streams else subprocess.PIPE)
        finally:
            os.close(writer)
        if streams == {"stdout"}:
            assert done.returncode == 0, done.stderr
            assert "turn.done" in events(done.stderr)
    # Both runs answered; the second exits 120, as any Python program whose stderr is gone.
    replies = (tmp_path / "replies.txt").read_text(encoding="utf-8").split()
    assert replies == ["ada", "bob", "ada", "bob"]


def test_a_second_process_is_still_refused_while_the_first_serves(tmp_path: Path) -> None:
    first, second = (SingleProcessGuard(tmp_path / "bot.db.owner-lock") for _ in range(2))
    first.acquire()
    try:
        with pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
            second.acquire()
    finally:
        first.release()
    second.acquire()  # the file the first removed is made anew
    second.release()
    assert list(tmp_path.iterdir()) == []
