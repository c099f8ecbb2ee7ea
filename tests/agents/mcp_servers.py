"""The test MCP server (`tests.fakes.mcp_server`) started the ways Threadline meets servers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.ports import free_port
from threadline.agents.mcp import McpServerSettings

ROOT = Path(__file__).resolve().parents[2]


def stdio_settings(call_log: Path, **extra: object) -> McpServerSettings:
    """A local server Threadline starts itself, as `command:` in the YAML."""
    return McpServerSettings.model_validate({
        "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
        "env": {"MCP_CALL_LOG": str(call_log), "PYTHONPATH": str(ROOT)}, "cwd": str(ROOT),
        **extra})


class HttpServerProcess:
    """The server on Streamable HTTP at 127.0.0.1, in a process the test can kill and restart."""

    def __init__(self, call_log: Path) -> None:
        self.port = free_port()
        self.call_log = call_log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        env = {**os.environ, "MCP_CALL_LOG": str(self.call_log), "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(  # noqa: ASYNC220 - started once, not awaited
            [sys.executable, "-m", "tests.fakes.mcp_server", "http", str(self.port)],
            cwd=ROOT, env=env)
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return
        raise RuntimeError("the MCP test server did not start listening")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def settings(self, **extra: object) -> McpServerSettings:
        return McpServerSettings.model_validate({"url": self.url, **extra})


def calls(call_log: Path) -> list[str]:
    """The tools the server really ran, in order (one line a run)."""
    if not call_log.exists():
        return []
    return [line.split()[0] for line in call_log.read_text().splitlines()]


def server_pids(call_log: Path) -> set[int]:
    if not call_log.exists():
        return set()
    return {int(line.split()[1]) for line in call_log.read_text().splitlines()}
