"""Interrupt mode: a message that arrives while the model is still streaming its reply stops
that reply (edited on Slack to say so, never finished) and one reply answers both messages.
Through `threadline run`'s runtime on the Slack fake, streaming."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.bursts.helpers import answer_every_question, tags_in
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, replies_sent, say
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.bursts.stage import INTERRUPTED

INTERRUPT = "bursts:\n  mode: interrupt\n  window: 0.5\n"
LONG_ANSWER = "answer q0-0 " + " ".join(f"word{n}" for n in range(120))


async def test_a_message_while_the_model_streams_stops_that_reply(tmp_path: Path) -> None:
    calls: list[int] = []

    def respond(body: dict[str, Any]) -> Reply:
        calls.append(1)
        if len(calls) == 1:  # slow enough to be interrupted mid-stream
            return text(LONG_ANSWER, tokens_per_second=20)
        return answer_every_question(body)

    async with platform("slack") as where, FakeAnthropic() as anthropic:
        anthropic.responder = respond
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      more_yaml=INTERRUPT):
            assert await say("slack", where, 0, "question q0-0")
            await until(lambda: any("word3" in r for r in replies_sent("slack", where)))
            assert await say("slack", where, 0, "question q0-1")
            await until(lambda: any(tags_in(r) == ["q0-0", "q0-1"]
                                    for r in replies_sent("slack", where)))
            await asyncio.sleep(0.5)
    replies = replies_sent("slack", where)
    assert len(anthropic.requests) == 2
    assert replies == [INTERRUPTED, "answer q0-0 q0-1"]
    with closing(sqlite3.connect(tmp_path / "threadline.db")) as db:
        states = [row[0] for row in db.execute(
            "SELECT state FROM threadline_inbox ORDER BY row_id")]
    assert states == ["answered", "answered"]
