"""`/approve ID` typed into `threadline run`'s local room approves the tool call the turn
before it waits on: the room reads the line while that turn waits (it used to read no line
until the turn was answered, so the call waited for its timeout)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text, tool_use
from tests.inspector.helpers import child_environment
from tests.launch import spawn

TOOL = '''\
import os


async def refund(order: str) -> str:
    """Refund an order in full."""
    with open(os.path.join(os.path.dirname(__file__), "refunds.log"), "a") as made:
        made.write(order + "\\n")
    return f"order {order} refunded"
'''


def refund_then_answer(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return text("Order 7 is refunded.")
    return tool_use("refund", {"order": "7"})


async def read_until(stream: asyncio.StreamReader, pattern: str) -> re.Match[str]:
    async with asyncio.timeout(60):
        while True:
            line = (await stream.readline()).decode()
            assert line, f"threadline run ended before printing {pattern!r}"
            found = re.search(pattern, line)
            if found:
                return found


async def test_approve_typed_while_the_turn_waits_runs_the_tool(tmp_path: Path) -> None:
    (tmp_path / "refund_tool.py").write_text(TOOL, encoding="utf-8")
    async with FakeAnthropic() as anthropic:
        anthropic.responder = refund_then_answer
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite:///{tmp_path / 'threadline.db'}
model:
  provider: anthropic
  base_url: {anthropic.url}
ops:
  enabled: false
channels:
  room:
    type: local
    stdin: true
agents:
  support:
    system_prompt: You refund orders.
    tools: [refund_tool:refund]
    require_approval: [refund]
    channels: [room]
""", encoding="utf-8")
        process = await spawn("run", str(config), cwd=tmp_path,
            env=child_environment({"ANTHROPIC_API_KEY": "test-key"}),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(b"@support please refund order 7\n")
            await process.stdin.drain()
            asked = await read_until(process.stdout, r"type /approve (\S+) ")
            process.stdin.write(f"/approve {asked.group(1)}\n".encode())
            await process.stdin.drain()
            await read_until(process.stdout, r"^support> Order 7 is refunded\.")
            await read_until(process.stdout, r"Approved: refund ran\.")
            process.stdin.close()
            async with asyncio.timeout(60):
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert (tmp_path / "refunds.log").read_text(encoding="utf-8").split() == ["7"]
