"""`threadline run` killed with SIGKILL mid-stream, then started again: nothing acknowledged lost.

Three people each send four questions (three conversations) to a slow model. The process is
killed (`kill -9`: no shutdown, no flush) while answers are still being written, then started
again on the same database. Every question the platform was told we received is answered
exactly once, every turn is stored exactly once, and each conversation keeps its order. Slack
then retries every event (as it does when an acknowledgement is late): nobody is answered twice.
Discord, which has no acknowledgement and never sends a new session an event again, is caught up
from the channels' history (`channels.catch_up`): a question that reached the killed process
before it was recorded is answered too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.launch import spawn
from tests.runtime.platforms import PEOPLE, Platform, platform, replies_sent, say, write_config
from threadline.backends.sql.store import SqlConversationStore

QUESTIONS = 4
_TAG = re.compile(r"q\d+-\d+")


def answer_the_newest_question(body: dict[str, Any]) -> Reply:
    """'answer qP-N' for the newest question tag in the prompt, after a slow think."""
    last = body["messages"][-1]["content"]
    words = last if isinstance(last, str) else " ".join(
        block.get("text", "") for block in last if isinstance(block, dict))
    return text(f"answer {_TAG.findall(words)[-1]}", delay=0.4)


def logged(log: Path, event: str) -> bool:
    return f'"{event}"'.encode() in log.read_bytes()


def times_logged(log: Path, event: str) -> int:
    """How many JSON log lines of `log` are this event."""
    return log.read_bytes().count(f'"event": "{event}"'.encode())


async def rounds_pass(log: Path, event: str, count: int) -> None:
    """Wait until `count` more `event` lines are logged (a chore's passes: see `Periodic`)."""
    seen = times_logged(log, event)
    await until(lambda: times_logged(log, event) >= seen + count)


def uncertain_questions(log: Path, database: Path) -> set[str]:
    """The tags of the questions whose replies `log` reports `pipeline.delivery_uncertain`
    (read from the stored questions: the log names turns, not texts)."""
    turn_ids = [json.loads(line)["turn_id"] for line in log.read_text().splitlines()
                if '"pipeline.delivery_uncertain"' in line]
    if not turn_ids:
        return set()
    with contextlib.closing(sqlite3.connect(database)) as connection:
        rows = connection.execute(
            "SELECT content FROM threadline_messages WHERE id IN "
            f"({', '.join('?' * len(turn_ids))})", turn_ids).fetchall()
    return {_TAG.findall(content)[-1] for (content,) in rows}


async def start(config: Path, where: Platform, log: Path) -> asyncio.subprocess.Process:
    """`threadline run CONFIG`, its JSON log lines in `log`, once it says it started."""
    sink = log.open("wb")
    process = await spawn("run", str(config), cwd=config.parent,
        env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
             # the code under test, when it is not the installed copy
             "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **where.env},
        stdout=subprocess.DEVNULL, stderr=sink)
    sink.close()
    await until(lambda: logged(log, "runtime.started") or process.returncode is not None)
    assert process.returncode is None, log.read_text()  # noqa: ASYNC240
    return process


async def until(condition: Any, *, within: float = 60.0) -> None:
    """Wait for `condition()` to hold, checking every 50 ms; TimeoutError after `within` s."""
    for _ in range(int(within / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError


@pytest.mark.parametrize("name", ["telegram", "slack", "discord", "matrix"])
async def test_kill_9_mid_stream_then_restart_answers_every_question_once(
        tmp_path: Path, name: str) -> None:
    questions = [(p, f"q{p}-{n}") for n in range(QUESTIONS) for p in range(PEOPLE)]
    expected = {tag for _, tag in questions}
    unacknowledged: list[tuple[int, str]] = []
    # Replies posted whole: a reply streamed when the process is killed has been seen in part
    # and is answered again (tests/agents/test_turn_pipeline_recovery.py); counting here is
    # of whole replies.
    async with platform(name, streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = answer_the_newest_question
        config = write_config(tmp_path, name, where, anthropic.url)
        first = await start(config, where, tmp_path / "first.log")
        alive = True

        async def stream() -> None:
            """The questions, one every 50 ms, while the process lives (it dies mid-stream)."""
            while questions and alive:
                person, tag = questions.pop(0)
                try:
                    acknowledged = await say(name, where, person, f"question {tag}")
                # The process is gone (perhaps while it read this very event): the platform
                # keeps the event.
                except (OSError, aiohttp.ClientConnectionError):
                    acknowledged = False
                if not acknowledged:
                    unacknowledged.append((person, tag))
                await asyncio.sleep(0.05)

        sender = asyncio.ensure_future(stream())
        try:
            await until(lambda: len(replies_sent(name, where)) >= 2)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            alive = False
            await sender
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        assert questions or unacknowledged or len(replies_sent(name, where)) < len(expected), (
            "the kill came too late to test anything")

        second = await start(config, where, tmp_path / "second.log")
        try:
            # What the platform holds again: Slack retries what was not acknowledged; the rest
            # of the stream arrives now.
            for person, tag in unacknowledged + questions:
                assert await say(name, where, person, f"question {tag}")
            # A reply the dead process had claimed and was posting is not posted again (the
            # person may have it): the pipeline logs `pipeline.delivery_uncertain` for it
            # instead. Every other question is answered.
            def uncertain() -> set[str]:
                return uncertain_questions(tmp_path / "second.log", tmp_path / "threadline.db")

            try:
                await until(lambda: expected - {a.split()[-1] for a in replies_sent(name, where)}
                            <= uncertain())
            except TimeoutError:
                raise AssertionError(
                    f"answered {sorted(replies_sent(name, where))}; after the restart the "
                    f"process logged:\n{(tmp_path / 'second.log').read_text()[-6000:]}"
                ) from None
            if name == "slack":  # Slack retries every event; none may be answered again
                for event, event_id in where.extra["events"]:
                    await where.fake.deliver_event(where.extra["events_url"], event,
                                                   event_id=event_id, retry_num=1)
                await asyncio.sleep(1.5)
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await second.wait()
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()

    answers = Counter(a.split()[-1] for a in replies_sent(name, where))
    assert set(answers) <= expected and expected - set(answers) <= uncertain()
    assert [tag for tag, times in answers.items() if times > 1] == []
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        conversations = await store.list_conversations()
        assert len(conversations) == PEOPLE
        for info in conversations:
            turns = [t.content for t in await store.get(info.conversation_id)]
            person = _TAG.findall(turns[0])[0].split("-")[0]
            assert [_TAG.findall(t)[-1] for t in turns] == [
                f"{person}-{n}" for n in range(QUESTIONS) for _ in (0, 1)]
            assert turns[1::2] == [f"answer {person}-{n}" for n in range(QUESTIONS)]
