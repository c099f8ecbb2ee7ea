"""A burst split by a `kill -9`, and a burst spread over two replicas: still one reply.

`threadline run` in coalesce mode on the Slack fake: a person sends two messages, the process
is killed (`kill -9`: nothing flushed), started again, and the person's third message comes
within the window of the second. The window is measured on the times the inbox recorded, so
the new process waits for the same quiet moment and answers the three turns with one reply.
On PostgreSQL, two processes take the three messages of one thread in turn (as Slack may
deliver them): the process that owns the conversation claims the burst in the inbox, and the
other finds it claimed, so both agree on one reply.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.bursts.helpers import answer_every_question, tags_in
from tests.fakes.anthropic import FakeAnthropic
from tests.runtime.platforms import platform, replies_sent, say, write_config
from tests.runtime.test_run_kill9_answers_everything import start, until
from tests.runtime.test_run_two_processes_postgres import Rig, answered, rig  # noqa: F401

# Longer than a restart takes even on a busy machine (15 s seen under load), so the third
# message comes within the second's window.
KILL_WINDOW = 30.0


async def test_a_burst_cut_by_kill_9_is_answered_once_after_the_restart(
        tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = answer_every_question
        config = write_config(tmp_path, "slack", where, anthropic.url)
        config.write_text(config.read_text(encoding="utf-8")
                          + f"bursts:\n  mode: coalesce\n  window: {KILL_WINDOW}\n",
                          encoding="utf-8")
        first = await start(config, where, tmp_path / "first.log")
        try:
            for n in range(2):  # acknowledged: durable in the inbox
                assert await say("slack", where, 0, f"question q0-{n}")
            first.send_signal(signal.SIGKILL)
            await first.wait()
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        second = await start(config, where, tmp_path / "second.log")
        try:
            assert await say("slack", where, 0, "question q0-2")
            await until(lambda: len(replies_sent("slack", where)) >= 1, within=90)
            await asyncio.sleep(1.0)  # a second reply, were there one, would come now
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()
    replies = replies_sent("slack", where)
    assert len(anthropic.requests) == 1, (tmp_path / "second.log").read_text()[-4000:]
    assert [tags_in(r) for r in replies] == [["q0-0", "q0-1", "q0-2"]]
    with closing(sqlite3.connect(tmp_path / "threadline.db")) as db:
        states = [row[0] for row in db.execute(
            "SELECT state FROM threadline_inbox ORDER BY row_id")]
        kinds = [row[0] for row in db.execute(
            "SELECT participant_kind FROM threadline_messages ORDER BY sequence")]
    assert states == ["answered"] * 3
    assert kinds.count("user") == 3 and kinds.count("agent") == 1


@pytest.mark.postgres
@pytest.mark.parametrize("rig", ["bursts:\n  mode: coalesce\n  window: 2.0\n"], indirect=True)
async def test_two_replicas_agree_on_one_burst(rig: Rig) -> None:  # noqa: F811
    rig.anthropic.responder = answer_every_question
    thread = rig.slack.next_ts()
    for n in range(3):  # Slack may deliver each to either process
        status, _ = await rig.send(n % 2, rig.event(f"question q7-{n}", thread=thread))
        assert status == 200
        await asyncio.sleep(0.3)
    await until(lambda: bool(rig.answers()), within=30)
    await rig.settled()
    await asyncio.sleep(1.0)
    assert [tags_in(r) for r in rig.answers()] == [["q7-0", "q7-1", "q7-2"]]
    assert len(rig.anthropic.requests) == 1
