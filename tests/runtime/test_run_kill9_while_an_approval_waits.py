"""`threadline run` killed with SIGKILL while a tool call waits for approval, started again,
then approved: the tool runs once, the request is not asked twice, and one reply lands."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text, tool_use
from tests.fakes.telegram import TgUser, private_chat
from tests.runtime.platforms import platform, write_config
from tests.runtime.test_run_kill9_answers_everything import logged, start, until

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


async def test_kill_9_while_an_approval_waits_then_approve_runs_the_tool_once(
        tmp_path: Path) -> None:
    person = TgUser(2001, "Person0", username="person0")
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = refund_then_answer
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        config.write_text(config.read_text() + "    tools: [refund_tool:refund]\n"
                          "    require_approval: [refund]\n", encoding="utf-8")
        (tmp_path / "refund_tool.py").write_text(TOOL, encoding="utf-8")
        telegram = where.fake
        first = await start(config, where, tmp_path / "first.log")
        try:
            await telegram.deliver(telegram.message(private_chat(person), person,
                                                    "please refund order 7"))
            # Asked, and the asking recorded (a kill between the two asks again: the
            # person may see the request twice, never not at all).
            await until(lambda: logged(tmp_path / "first.log", "approval.asked"))
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        [request] = [m for m in telegram.sent if "reply_markup" in m]

        second = await start(config, where, tmp_path / "second.log")
        try:
            # The restarted process takes the open turn again and waits on the same request.
            await until(lambda: len(anthropic.requests) >= 2)
            await telegram.deliver(telegram.press(request, "Approve", user=person))
            await until(lambda: "Approved: refund ran." in telegram.texts.values())
            second.send_signal(signal.SIGTERM)
            await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()

    assert (tmp_path / "refunds.log").read_text().split() == ["7"]
    assert [m for m in telegram.sent if "reply_markup" in m] == [request]  # asked once
    texts = list(telegram.texts.values())
    assert texts.count("Order 7 is refunded.") == 1
    assert texts[-2:] == ["Order 7 is refunded.", "Approved: refund ran."]
