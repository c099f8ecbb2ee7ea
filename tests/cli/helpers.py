"""Running the `threadline` command in-process (fast) or as a child process (as a user would:
forked by `tests.launch`)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.launch import run, spawn
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
    done = run(*argv, cwd=cwd, env=environment, input=stdin, timeout=timeout)
    return Outcome(done.returncode, done.stdout, done.stderr)


async def run_process_async(*argv: str, cwd: Path, env: Mapping[str, str] | None = None,
                            time_limit: float = 60) -> Outcome:
    """`run_process` without blocking the event loop (fake servers in this test keep serving)."""

    environment = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    environment.update(env or {})
    process = await spawn(*argv, cwd=cwd, env=environment, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    async with asyncio.timeout(time_limit):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Outcome(process.returncode, out.decode(), err.decode())


def entry_point_package(site: Path, *, distribution: str, group: str, name: str,
                        value: str) -> Path:
    """A distribution in `site` (a folder to put on the path) whose one entry point registers
    `name` in `group` as `value` (`module:attribute`), as an installed package's would."""
    info = site / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {value}\n", encoding="utf-8")
    return site


async def run_until_replied(config: Path, *, cwd: Path, env: Mapping[str, str],
                            outbox: Path) -> str:
    """`threadline run --no-input CONFIG` until `outbox` (written by the child) holds a reply,
    then a SIGTERM; the outbox's text. The run must end cleanly."""
    environment = {**{k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}, **env}
    process = await spawn("run", "--no-input", str(config), cwd=cwd, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        async with asyncio.timeout(60):
            while not await asyncio.to_thread(_written, outbox):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return await asyncio.to_thread(outbox.read_text, encoding="utf-8")


def _written(path: Path) -> bool:
    return path.exists() and bool(path.read_text(encoding="utf-8"))
