"""`threadline run` with an `http` channel, killed with SIGKILL, started again: nothing lost.

Mid-turn: three callers each send four questions to a slow model; the process is killed while
answers are being written. The callers send again what was not answered 202 (and, as a
cautious caller would, everything else too): after the restart every question is answered
once at the callback.

Callback down: the questions are answered while the callback refuses connections; the replies
wait in the database's outbox; the process is killed; the callback comes back; the next
process delivers each reply once.
"""

from __future__ import annotations

import asyncio
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.http_caller import FakeCaller
from tests.ports import free_port
from tests.runtime.platforms import Platform, write_config
from tests.runtime.test_run_kill9_answers_everything import start, until
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.http_replies import SqlReplyOutbox

SECRET = "an-end-to-end-secret-of-32-chars"
PEOPLE, QUESTIONS = 3, 4
_TAG = re.compile(r"q\d+-\d+")


def answer_the_newest_question(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    words = last if isinstance(last, str) else " ".join(
        block.get("text", "") for block in last if isinstance(block, dict))
    return text(f"answer {_TAG.findall(words)[-1]}", delay=0.4)


def http_platform(caller: FakeCaller) -> tuple[Platform, str]:
    port = free_port()
    channel = f"""\
    type: http
    secret: ${{THREADLINE_HTTP_SECRET}}
    host: 127.0.0.1
    port: {port}
    callback_url: {caller.callback_url}
    retry_initial_seconds: 0.1
    retry_max_seconds: 0.5
"""
    return (Platform(channel, {"THREADLINE_HTTP_SECRET": SECRET}, caller),
            f"http://127.0.0.1:{port}/http/messages")


async def ask(caller: FakeCaller, url: str, person: int, tag: str) -> bool:
    """Whether the question was acknowledged (202: recorded)."""
    try:
        status, _ = await caller.send(url, conversation_id=f"person-{person}",
                                      message_id=tag, text=f"question {tag}")
    except (OSError, aiohttp.ClientError):
        return False
    return status == 202


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(60):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


def answered(caller: FakeCaller) -> Counter[str]:
    """How many replies (by reply id: a repost of one is one) answer each question."""
    return Counter(r["text"].split()[-1] for r in caller.replies.values())


async def test_kill_9_mid_turn_then_restart_answers_every_question_once(tmp_path: Path) -> None:
    questions = [(p, f"q{p}-{n}") for n in range(QUESTIONS) for p in range(PEOPLE)]
    expected = {tag for _, tag in questions}
    async with FakeCaller(SECRET) as caller, FakeAnthropic() as anthropic:
        anthropic.responder = answer_the_newest_question
        where, url = http_platform(caller)
        config = write_config(tmp_path, "api", where, anthropic.url)
        first = await start(config, where, tmp_path / "first.log")
        unacknowledged: list[tuple[int, str]] = []
        alive = True

        async def stream() -> None:
            pending = list(questions)
            while pending and alive:
                person, tag = pending.pop(0)
                if not await ask(caller, url, person, tag):
                    unacknowledged.append((person, tag))
                await asyncio.sleep(0.05)
            unacknowledged.extend(pending)

        sender = asyncio.ensure_future(stream())
        try:
            await until(lambda: len(caller.replies) >= 2)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            alive = False
            await sender
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        assert unacknowledged or len(caller.replies) < len(expected), "the kill came too late"

        second = await start(config, where, tmp_path / "second.log")
        try:
            for person, tag in unacknowledged + questions:  # the rest, then every one again
                assert await ask(caller, url, person, tag)
            try:
                await until(lambda: set(answered(caller)) >= expected)
            except TimeoutError:
                raise AssertionError(f"answered {sorted(answered(caller))}; the second process "
                                     f"logged:\n{(tmp_path / 'second.log').read_text()[-6000:]}"
                                     ) from None
            await asyncio.sleep(1.0)  # time for a wrong second answer to arrive
        finally:
            await stop(second)
    assert [tag for tag, times in answered(caller).items() if times > 1] == []
    assert caller.refused_signatures == 0


async def test_replies_kept_while_the_callback_is_down_survive_kill_9(tmp_path: Path) -> None:
    async with FakeCaller(SECRET) as caller, FakeAnthropic() as anthropic:
        anthropic.responder = answer_the_newest_question
        where, url = http_platform(caller)
        config = write_config(tmp_path, "api", where, anthropic.url)
        await caller.go_down()
        first = await start(config, where, tmp_path / "first.log")
        try:
            for person in range(PEOPLE):
                assert await ask(caller, url, person, f"q{person}-0")
            async with SqlConversationStore(
                    f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
                outbox = SqlReplyOutbox(store)
                for _ in range(600):  # every reply kept, and tried at least once
                    kept = await outbox.after("api", cursor=0, limit=10)
                    if len(kept) == PEOPLE and all(r.attempts >= 1 for r in kept):
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError(f"kept {kept}")
            first.send_signal(signal.SIGKILL)
            await first.wait()
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        assert caller.posts == []
        await caller.come_back()
        second = await start(config, where, tmp_path / "second.log")
        try:
            await caller.wait_for_replies(PEOPLE, within=60)
            await asyncio.sleep(1.0)  # time for a repeat to arrive
        finally:
            await stop(second)
    assert answered(caller) == Counter({f"q{p}-0": 1 for p in range(PEOPLE)})
    assert len(caller.posts) == PEOPLE  # each posted once, by the second process
    assert {r["conversation_id"] for r in caller.replies.values()} == {
        f"person-{p}" for p in range(PEOPLE)}
