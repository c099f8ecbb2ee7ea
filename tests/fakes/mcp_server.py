"""A real MCP server (the SDK's FastMCP) for tests and the bench, over stdio or Streamable HTTP.

    python -m tests.fakes.mcp_server stdio
    python -m tests.fakes.mcp_server http PORT

Its tools: `add`, `shout`, `big_report` (a large result), `slow` (for timeouts),
`delete_everything` (for deny lists) and `add_tool` (adds `late_tool` and tells the client its
tool list changed). Each run of a tool appends a line to the file named by `MCP_CALL_LOG` when
that is set, so a test can count how many times a tool really ran, across restarts of this
server.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("threadline-test")


def _ran(name: str) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if path:
        with Path(path).open("a", encoding="utf-8") as log:
            log.write(f"{name} {os.getpid()}\n")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    _ran("add")
    return str(a + b)


@server.tool()
async def shout(text: str) -> str:
    """Repeat the text in capitals."""
    _ran("shout")
    return text.upper()


@server.tool()
async def big_report(lines: int) -> str:
    """A long report of the given number of lines."""
    _ran("big_report")
    return "\n".join(f"line {i}: all systems nominal" for i in range(lines))


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after the given number of seconds."""
    _ran("slow")
    await asyncio.sleep(seconds)
    return "finally"


@server.tool()
async def delete_everything() -> str:
    """Delete every file (a tool an operator denies)."""
    _ran("delete_everything")
    return "deleted"


@server.tool()
async def add_tool(ctx: Context) -> str:  # type: ignore[type-arg]
    """Add the `late_tool` tool to this server."""

    async def late_tool() -> str:
        """A tool added while the server runs."""
        return "late and present"

    server.add_tool(late_tool, name="late_tool")
    await ctx.session.send_tool_list_changed()
    return "added"


def main() -> None:
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]),
                    log_level="warning")


if __name__ == "__main__":
    main()
