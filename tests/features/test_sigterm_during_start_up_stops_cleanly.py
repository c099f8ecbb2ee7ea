"""SIGTERM at any point of `threadline run`'s start-up (before, while and after its stdio MCP
server connects) ends the process within seconds, and leaves no MCP server process behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from tests.agents.mcp_servers import ROOT
from tests.fakes.anthropic import FakeAnthropic
from tests.launch import spawn
from tests.runtime.platforms import platform, write_config
from tests.runtime.test_run_kill9_answers_everything import logged, until

# Starts the test MCP server after `delay` seconds: a server slow to come up.
SLOW_SERVER = ("import runpy, sys, time; time.sleep(float(sys.argv[1])); "
               "sys.argv = ['mcp_server', 'stdio']; "
               "runpy.run_module('tests.fakes.mcp_server', run_name='__main__')")


def servers_tagged(tag: str) -> list[int]:
    """Pids of live processes whose command line carries `tag`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("when", ["before", "while", "after"])
async def test_sigterm_during_start_up_ends_the_process_and_its_mcp_server(
        tmp_path: Path, when: str) -> None:
    tag = f"mcp-{uuid.uuid4().hex}"
    delay = 30.0 if when == "while" else 0.0
    async with platform("telegram") as where, FakeAnthropic() as anthropic:
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        config.write_text(config.read_text(encoding="utf-8") + f"""\
    mcp:
      allow: [calc]
mcp_servers:
  calc:
    command: {sys.executable}
    args: [-c, "{SLOW_SERVER}", "{delay}", {tag}]
    env: {{PYTHONPATH: "{ROOT}"}}
    cwd: {ROOT}
    connect_timeout: 60
""", encoding="utf-8")
        log = tmp_path / "run.log"
        with log.open("wb") as sink:
            process = await spawn("run", str(config), cwd=tmp_path,
                env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
                     "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **where.env},
                stdout=asyncio.subprocess.DEVNULL, stderr=sink)
        try:
            if when == "before":
                await until(lambda: logged(log, "store.ready"))
            elif when == "while":
                # The server is starting (it waits `delay` s): Threadline waits for it.
                await until(lambda: bool(servers_tagged(tag)))
                assert not logged(log, "runtime.started")
            else:
                await until(lambda: logged(log, "runtime.started"))
                assert servers_tagged(tag)
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(10):
                code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert code == 0, log.read_text()
        await until(lambda: not servers_tagged(tag), within=5)
