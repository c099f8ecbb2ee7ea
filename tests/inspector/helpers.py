"""`threadline run` as a child process against fake servers, for the inspector's tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from tests.cli.helpers import THREADLINE
from tests.launch import spawn


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """A clean environment for a child `threadline`: PATH, PYTHONPATH (this checkout), `extra`."""
    keep = {k: os.environ[k] for k in ("PATH", "PYTHONPATH") if k in os.environ}
    keep["PATH"] = f"{THREADLINE.parent}:{keep.get('PATH', '')}"
    return {**keep, **extra}


async def wait_for_log(stream: asyncio.StreamReader, event: str,
                       seen: dict[str, dict[str, object]] | None = None) -> dict[str, object]:
    """The first JSON log line with this event (fails if the process exits first); `seen`
    keeps the lines read on the way, by event."""
    async with asyncio.timeout(60):
        while True:
            line = await stream.readline()
            if not line:
                raise AssertionError(f"threadline exited before logging {event}")
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if seen is not None:
                seen[str(entry.get("event"))] = dict(entry)
            if entry.get("event") == event:
                return dict(entry)


@asynccontextmanager
async def threadline_run(config: Path, env: Mapping[str, str], *,
                         logged: dict[str, dict[str, object]] | None = None) -> AsyncIterator[
        asyncio.subprocess.Process]:
    """`threadline run CONFIG`, started (logged runtime.started) and stopped by SIGTERM;
    `logged` gets its JSON log lines by event (the last of each): the start-up's as soon as
    it has started (`console.listening` has the console), the rest once it has stopped."""
    process = await spawn("run", str(config), cwd=config.parent, env=child_environment(env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        await wait_for_log(process.stderr, "runtime.started", logged)
        yield process
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            _, rest = await process.communicate()
        assert process.returncode == 0, rest.decode()
        for line in rest.decode().splitlines() if logged is not None else ():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                logged[str(entry.get("event"))] = dict(entry)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
