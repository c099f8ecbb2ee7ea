"""`threadline run` with a stdio MCP server it starts itself: the first turn after start, a
turn left waiting by a `kill -9`, and a call approved after one, each see the server's tools.

The approval is asked for by the tool's own name (`require_approval: [add]`), not the name
the model sees (`calc__add`): one name means the tool whichever way it is written.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.mcp_servers import ROOT
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest, Reply, text, tool_use
from tests.fakes.telegram import TgUser, private_chat
from tests.runtime.platforms import platform, write_config
from tests.runtime.test_run_kill9_answers_everything import logged, start, until


def with_calc(config: Path, call_log: Path, *, approval: str = "", timeout: float = 600) -> None:
    """The config's agent given the test MCP server (started by Threadline over stdio)."""
    config.write_text(config.read_text(encoding="utf-8") + f"""\
    mcp:
      allow: [calc]
{approval}mcp_servers:
  calc:
    command: {sys.executable}
    args: [-m, tests.fakes.mcp_server, stdio]
    env: {{MCP_CALL_LOG: "{call_log}", PYTHONPATH: "{ROOT}"}}
    cwd: {ROOT}
approvals:
  timeout_seconds: {timeout}
""", encoding="utf-8")


def tools_offered(request: RecordedRequest) -> set[str]:
    return {tool["name"] for tool in request.body.get("tools", [])}


def add_then_answer(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        result = next(b for b in last if b.get("type") == "tool_result")
        return text(f"The tool said: {result['content']}")
    return tool_use("calc__add", {"a": 20, "b": 22})


def runs(call_log: Path) -> list[str]:
    return call_log.read_text().split("\n")[:-1] if call_log.exists() else []


async def test_the_first_turn_and_a_turn_left_by_a_crash_are_offered_the_servers_tools(
        tmp_path: Path) -> None:
    person = TgUser(2001, "Person0", username="person0")
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        restarted = False

        def hold_the_second_turn_in_the_first_process(body: dict[str, Any]) -> Reply:
            if not restarted and "again" in str(body["messages"][-1]):
                return text("too late", delay=30.0)
            return text("done")

        anthropic.responder = hold_the_second_turn_in_the_first_process
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        with_calc(config, tmp_path / "calls.log")
        telegram = where.fake
        first = await start(config, where, tmp_path / "first.log")
        try:
            await telegram.deliver(telegram.message(private_chat(person), person, "hello"))
            await until(lambda: len(anthropic.requests) >= 1)
            # Answered at once after start: the server's tools are there already.
            assert "calc__add" in tools_offered(anthropic.requests[0])
            # A second turn, left in the inbox by a kill -9 before it is answered.
            await telegram.deliver(telegram.message(private_chat(person), person, "again"))
            await until(lambda: len(anthropic.requests) >= 2)
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        restarted = True
        before = len(anthropic.requests)
        second = await start(config, where, tmp_path / "second.log")
        try:
            await until(lambda: len(anthropic.requests) > before)
            retaken = anthropic.requests[before]
            assert "again" in str(retaken.body["messages"][-1])
            assert "calc__add" in tools_offered(retaken)
        finally:
            second.send_signal(signal.SIGTERM)
            await second.wait()


@pytest.mark.parametrize("decision", ["Approve", "Deny"])
async def test_kill_9_while_an_mcp_call_waits_for_approval_then_decide(
        tmp_path: Path, decision: str) -> None:
    person = TgUser(2001, "Person0", username="person0")
    call_log = tmp_path / "calls.log"
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = add_then_answer
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        with_calc(config, call_log, approval="    require_approval: [add]\n")
        telegram = where.fake
        first = await start(config, where, tmp_path / "first.log")
        try:
            await telegram.deliver(telegram.message(private_chat(person), person,
                                                    "what is 20 + 22?"))
            # Asked, and the asking recorded (a kill between the two asks again: the
            # person may see the request twice, never not at all).
            await until(lambda: logged(tmp_path / "first.log", "approval.asked"))
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        [request] = [m for m in telegram.sent if "reply_markup" in m]
        assert runs(call_log) == []  # held: named by its own name, it waits for a person

        second = await start(config, where, tmp_path / "second.log")
        try:
            # The restarted process takes the open turn again and waits on the same request.
            await until(lambda: len(anthropic.requests) >= 2)
            assert "calc__add" in tools_offered(anthropic.requests[1])
            await telegram.deliver(telegram.press(request, decision, user=person))
            word = "Approved" if decision == "Approve" else "Denied"
            await until(lambda: any(t.startswith(word) for t in telegram.texts.values()))
            await until(lambda: any(t.startswith("The tool said") for t in
                                    telegram.texts.values()) or decision == "Deny")
            second.send_signal(signal.SIGTERM)
            await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()

    assert [m for m in telegram.sent if "reply_markup" in m] == [request]  # asked once
    texts = list(telegram.texts.values())
    if decision == "Approve":
        assert [line.split()[0] for line in runs(call_log)] == ["add"]  # ran exactly once
        assert texts.count("The tool said: 42") == 1
    else:
        assert runs(call_log) == []
        assert not any(t.startswith("The tool said: 42") for t in texts)


async def test_an_approval_that_expired_never_runs(tmp_path: Path) -> None:
    person = TgUser(2001, "Person0", username="person0")
    call_log = tmp_path / "calls.log"
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = add_then_answer
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        with_calc(config, call_log, approval="    require_approval: [calc/add]\n", timeout=1)
        telegram = where.fake
        process = await start(config, where, tmp_path / "run.log")
        try:
            await telegram.deliver(telegram.message(private_chat(person), person,
                                                    "what is 20 + 22?"))
            await until(lambda: any("reply_markup" in m for m in telegram.sent))
            [request] = [m for m in telegram.sent if "reply_markup" in m]
            await until(lambda: len(anthropic.requests) >= 2)  # told it expired
            await telegram.deliver(telegram.press(request, "Approve", user=person))
            await until(lambda: any(t.startswith("Too late") for t in telegram.texts.values()))
        finally:
            process.send_signal(signal.SIGTERM)
            await process.wait()
    assert runs(call_log) == []
