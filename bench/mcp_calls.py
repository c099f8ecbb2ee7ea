"""What an MCP tool call costs over calling the same function as a Python tool.

The test MCP server (`tests/fakes/mcp_server.py`, the SDK's FastMCP) runs as a local stdio
server Threadline starts, and as a Streamable HTTP server on 127.0.0.1 in its own process;
its `add` tool is called through Threadline's `McpTool` (what the agent loop runs), and the
same function is called as a `FunctionTool`. Printed: p50 and p99 per call, and the MCP
overhead over the Python tool at p50.

    .venv/bin/python bench/mcp_calls.py            # 2,000 calls each
    .venv/bin/python bench/mcp_calls.py --quick    # 200

Figures only; a shared machine makes single runs noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# This file's own folder first on the path would make `import mcp` find this file.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

from bench.figures import percentile  # noqa: E402
from tests.agents.mcp_servers import HttpServerProcess, stdio_settings  # noqa: E402
from threadline.agents.mcp import McpServer, McpToolset  # noqa: E402
from threadline.agents.tools import Tool, function_tool  # noqa: E402
from threadline.log import configure_logging  # noqa: E402


async def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


async def timed(tool: Tool, calls: int) -> list[float]:
    for _ in range(min(calls // 10, 50)):  # warm up: connections, imports, caches
        await tool.run({"a": 1, "b": 2})
    took: list[float] = []
    for n in range(calls):
        started = time.perf_counter()
        result = await tool.run({"a": n, "b": 1})
        took.append(time.perf_counter() - started)
        assert result == str(n + 1), result
    return took


async def over_mcp(server: McpServer, calls: int) -> list[float]:
    server.start()
    try:
        if not await server.wait_up(60):
            raise SystemExit(f"the MCP server did not come up: {server.problem}")
        [tool] = [t for t in McpToolset([server]).tools() if t.remote_name == "add"]
        return await timed(tool, calls)
    finally:
        await server.stop()


def line(name: str, took: list[float], baseline: float | None = None) -> str:
    p50, p99 = percentile(took, 0.5) * 1000, percentile(took, 0.99) * 1000
    extra = "" if baseline is None else f"  overhead p50 {p50 - baseline * 1000:8.3f} ms"
    return f"{name:<26} p50 {p50:8.3f} ms  p99 {p99:8.3f} ms{extra}"


async def main(calls: int) -> None:
    configure_logging(level="warning")
    python = await timed(function_tool(add), calls)
    base = percentile(python, 0.5)
    print(f"{calls} calls each")
    print(line("python tool", python))
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "calls.log"
        stdio = await over_mcp(McpServer("bench", stdio_settings(log)), calls)
        print(line("mcp stdio", stdio, base))
        http = HttpServerProcess(log)
        await http.start()
        try:
            streamed = await over_mcp(McpServer("bench", http.settings()), calls)
        finally:
            http.kill()
        print(line("mcp streamable http", streamed, base))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="200 calls each")
    args = parser.parse_args()
    asyncio.run(main(200 if args.quick else args.calls))
