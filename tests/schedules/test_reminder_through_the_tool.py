"""A reminder the agent promises through its `schedule` tool, on each platform's fake, through
`threadline run`: posted once at its time where it was asked; and with the process killed
(`kill -9`) before it is due and started again after, posted once, marked late. The time is
read in the person's zone where the platform says it (Slack), else the config's.
"""

from __future__ import annotations

import asyncio
import json
import signal
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply, text, tool_use
from tests.runtime.platforms import Platform, platform, replies_sent, say, write_config
from tests.runtime.test_run_kill9_answers_everything import rounds_pass, start, until
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.schedules import SqlScheduleBook

REMINDER = "stretch your legs"
# Logged (at debug) after each scheduler round: a post seen, this many more rounds must pass
# without a second one.
ROUND_DONE = "schedules.round_done"
MORE_ROUNDS = 3
PLATFORMS = ["telegram", "slack", "discord"]


def remind_in(seconds: int) -> Any:
    """The model: asked for a reminder, it calls `schedule`; given the result, it confirms."""

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return text("Done, I will remind you.")
        return tool_use("schedule", {"when": f"in {seconds} seconds", "text": REMINDER})

    return answer


def configure(tmp_path: Path, name: str, where: Platform, model_url: str) -> Path:
    config = write_config(tmp_path, name, where, model_url)
    config.write_text(config.read_text(encoding="utf-8").replace(
        "  format: json\n", "  format: json\n  level: debug\n"), encoding="utf-8")
    with config.open("a", encoding="utf-8") as file:
        file.write("scheduler:\n  late_after: 1\n  poll_interval: 0.2\n")
    return config


async def due_at(tmp_path: Path) -> datetime:
    """When the one waiting schedule falls due, as stored."""
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'threadline.db'}") as store:
        [waiting] = await SqlScheduleBook(store).listed()
    assert waiting.due_at is not None
    return waiting.due_at


def reminders(name: str, where: Platform) -> list[str]:
    return [r for r in replies_sent(name, where) if REMINDER in r]


def in_the_asking_thread(name: str, where: Platform) -> bool:
    """The reminder went where the person asked (their chat, thread or channel)."""
    if name == "telegram":
        [post] = [m for m in where.fake.sent if REMINDER in m["text"]]
        return bool(post["chat"]["id"] == 2001)
    if name == "slack":
        [post] = [c for c in where.fake.calls_to("chat.postMessage")
                  if REMINDER in str(c.params.get("text"))]
        return bool(post.params.get("thread_ts") == where.extra["threads"][0])
    [post] = [m for m in where.fake.posted if REMINDER in m["content"]]
    return bool(str(post["channel_id"]) == str(where.extra["channels"][0]))


@asynccontextmanager
async def running(config: Path, where: Platform, log: Path) -> AsyncIterator[Process]:
    """`threadline run` for the block, stopped with SIGTERM after it (killed if it lingers)."""
    process = await start(config, where, log)
    try:
        yield process
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def stored_reminders(tmp_path: Path) -> list[Any]:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'threadline.db'}") as store:
        turns = [m for c in await store.list_conversations() for m in
                 await store.get(c.conversation_id)]
    return [m for m in turns if REMINDER in m.content and m.participant.kind == "agent"]


@pytest.mark.parametrize("name", PLATFORMS)
async def test_a_reminder_set_through_the_tool_is_posted_once_in_the_asking_thread(
        tmp_path: Path, name: str) -> None:
    async with platform(name, streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = remind_in(2)
        if name == "slack":  # Slack says the person's time zone; the others do not
            where.fake.add_user("U0ALICE", display_name="Alice", tz="Europe/Paris")
        log = tmp_path / "run.log"
        async with running(configure(tmp_path, name, where, anthropic.url), where, log):
            await say(name, where, 0, "remind me in 2 seconds to stretch")
            await until(lambda: "Done, I will remind you." in replies_sent(name, where))
            assert reminders(name, where) == []  # not before its time
            await until(lambda: bool(reminders(name, where)))
            await rounds_pass(log, ROUND_DONE, MORE_ROUNDS)  # none may post it again
        assert reminders(name, where) == [REMINDER]
        assert in_the_asking_thread(name, where)
        assert len(anthropic.requests) == 2  # the ask and the tool round; the post took none
        zone = "Europe/Paris" if name == "slack" else "UTC"  # the person's, else the config's
        [result] = [b for b in anthropic.bodies[1]["messages"][-1]["content"]
                    if b.get("type") == "tool_result"]
        assert f"{zone}. People can see or cancel it" in json.dumps(result), result
        [stored] = await stored_reminders(tmp_path)
        assert stored.metadata.message_id  # recorded as posted


@pytest.mark.parametrize("name", PLATFORMS)
async def test_a_reminder_due_while_killed_is_posted_once_late_after_the_restart(
        tmp_path: Path, name: str) -> None:
    async with platform(name, streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = remind_in(3)
        config = configure(tmp_path, name, where, anthropic.url)
        async with running(config, where, tmp_path / "first.log") as first:
            await say(name, where, 0, "remind me in 3 seconds to stretch")
            await until(lambda: "Done, I will remind you." in replies_sent(name, where))
            first.send_signal(signal.SIGKILL)
            await first.wait()
        assert reminders(name, where) == []
        # It falls due, and is late (scheduler.late_after: 1 s), while no process runs.
        late = (await due_at(tmp_path) - datetime.now(UTC)).total_seconds() + 1.5
        await asyncio.sleep(max(late, 0.0))
        second = tmp_path / "second.log"
        async with running(config, where, second):
            await until(lambda: bool(reminders(name, where)))
            await rounds_pass(second, ROUND_DONE, MORE_ROUNDS)  # none may post it again
        [posted] = reminders(name, where)
        assert posted.startswith(REMINDER) and "(late: this was due at" in posted
        assert in_the_asking_thread(name, where)
        [stored] = await stored_reminders(tmp_path)
        assert "late" in stored.content
        logged = [json.loads(line) for line in (tmp_path / "second.log").read_text().splitlines()
                  if line.startswith("{")]
        assert any(e.get("event") == "schedules.fired" and e.get("late") for e in logged)
