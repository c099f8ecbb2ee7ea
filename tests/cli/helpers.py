"""Running the `threadline` command in-process (fast) or as a subprocess (as a user would)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from threadline.cli import main

THREADLINE = Path(sys.executable).with_name("threadline")


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Outcome:
    """`threadline ARGV` in this process; usage errors (SystemExit) become their exit code."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def run_process(*argv: str, cwd: Path, env: Mapping[str, str] | None = None,
                stdin: str | None = None, timeout: float = 60) -> Outcome:
    """`threadline ARGV` as a child process, with a clean environment plus `env`."""
    environment = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    environment.update(env or {})
    done = subprocess.run([str(THREADLINE), *argv], cwd=cwd, env=environment, input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return Outcome(done.returncode, done.stdout, done.stderr)


async def run_process_async(*argv: str, cwd: Path, env: Mapping[str, str] | None = None,
                            time_limit: float = 60) -> Outcome:
    """`run_process` without blocking the event loop (fake servers in this test keep serving)."""

    environment = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    environment.update(env or {})
    process = await asyncio.create_subprocess_exec(
        str(THREADLINE), *argv, cwd=cwd, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    async with asyncio.timeout(time_limit):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Outcome(process.returncode, out.decode(), err.decode())
