"""`threadline run` on Matrix killed with SIGKILL while a tool call waits for approval, started
again, then approved by a reaction: the tool runs once, the request is posted once, and one
reply lands."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.matrix import FakeMatrix
from tests.runtime.platforms import platform, say, write_config
from tests.runtime.test_run_kill9_answers_everything import logged, start, until
from tests.runtime.test_run_kill9_while_an_approval_waits import TOOL, refund_then_answer
from threadline.channels.matrix.outbound import CHOICE_KEYS


async def test_kill_9_while_an_approval_waits_then_a_reaction_runs_the_tool_once(
        tmp_path: Path) -> None:
    async with platform("matrix", streaming=False) as where, FakeAnthropic() as anthropic:
        fake: FakeMatrix = where.fake
        anthropic.responder = refund_then_answer
        config = write_config(tmp_path, "matrix", where, anthropic.url)
        config.write_text(config.read_text() + "    tools: [refund_tool:refund]\n"
                          "    require_approval: [refund]\n", encoding="utf-8")
        (tmp_path / "refund_tool.py").write_text(TOOL, encoding="utf-8")
        first = await start(config, where, tmp_path / "first.log")
        try:
            await say("matrix", where, 0, "please refund order 7")
            await until(lambda: logged(tmp_path / "first.log", "approval.asked"))
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        [request] = [s for s in fake.messages_sent() if "org.threadline.choices" in s.content]

        second = await start(config, where, tmp_path / "second.log")
        try:
            await until(lambda: len(anthropic.requests) >= 2)
            fake.react(request.room_id, request.event_id, "@person0:fake.test", CHOICE_KEYS[0])
            await until(lambda: any(s.content["body"] == "Approved: refund ran."
                                    for s in fake.messages_sent()))
            second.send_signal(signal.SIGTERM)
            await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()

    assert (tmp_path / "refunds.log").read_text().split() == ["7"]
    bodies = [str(s.content["body"]) for s in fake.messages_sent()]
    assert [s for s in fake.messages_sent() if "org.threadline.choices" in s.content] == [
        request]  # asked once
    assert bodies.count("Order 7 is refunded.") == 1
    assert bodies[-2:] == ["Order 7 is refunded.", "Approved: refund ran."]
