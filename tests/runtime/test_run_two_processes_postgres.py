"""Two `threadline run` processes on one PostgreSQL database, behind one Slack request URL.

Slack may deliver an event, or its retry, to either process. Whatever reaches which process: no
question is answered twice, each conversation is answered in order by one process at a time
(each prompt holds the answer the other process just gave), and when a process dies holding a
conversation, the other one answers what it left.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.slack import FakeSlack
from tests.fakes.tcp_proxy import TcpProxy
from tests.launch import spawn
from tests.ports import free_port
from tests.runtime.test_run_kill9_answers_everything import logged, until
from threadline.backends.sql import SqlConversationStore

pytestmark = pytest.mark.postgres
_TAG = re.compile(r"q\d+")


def newest_question(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    words = last if isinstance(last, str) else " ".join(
        block.get("text", "") for block in last if isinstance(block, dict))
    return str(_TAG.findall(words)[-1])


def answer_the_newest_question(body: dict[str, Any]) -> Reply:
    tag = newest_question(body)
    return text(f"answer {tag}", delay=3.0 if tag == "q90" else 0.1)  # q90 thinks long


@dataclass
class Worker:
    process: asyncio.subprocess.Process
    events_url: str
    log: Path


@dataclass
class Rig:
    slack: FakeSlack
    anthropic: FakeAnthropic
    proxy: TcpProxy
    workers: list[Worker]
    store_url: str  # the database itself, not through the proxy

    async def settled(self) -> None:
        """Returns once no process has a turn left to answer: a reply is posted before its turn
        is finished, so every answer there will be is on Slack by then."""
        async with SqlConversationStore(self.store_url) as store, asyncio.timeout(30):
            while await store.inbox.conversations_waiting():  # noqa: ASYNC110 - other processes write it
                await asyncio.sleep(0.05)

    def event(self, words: str, *, thread: str) -> dict[str, Any]:
        return self.slack.message_event(f"<@{self.slack.bot_user_id}> {words}",
                                        thread_ts=thread)

    async def send(self, worker: int, event: dict[str, Any], *, event_id: str | None = None,
                   retry_num: int | None = None) -> tuple[int, str]:
        """Deliver `event` (again, as a retry, with its `event_id`) to one of the workers."""
        delivery = await self.slack.deliver_event(self.workers[worker].events_url, event,
                                                  event_id=event_id, retry_num=retry_num)
        return delivery.status, delivery.event_id

    def answers(self) -> Counter[str]:
        """What the bot's messages show (a streamed reply as it ended)."""
        return Counter(self.slack.messages.values())


async def start_worker(tmp_path: Path, name: str, store_url: str, rig: Rig, *,
                       more_yaml: str = "") -> Worker:
    port = free_port()
    config = tmp_path / f"{name}.yaml"
    config.write_text(f"""\
store:
  url: {store_url}
  busy_timeout: 2
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {rig.anthropic.url}
log:
  format: json
  level: debug
ops:
  port: 0
channels:
  slack:
    type: slack
    mode: http
    bot_token: ${{SLACK_BOT_TOKEN}}
    signing_secret: ${{SLACK_SIGNING_SECRET}}
    api_base_url: {rig.slack.url}
    host: 127.0.0.1
    port: {port}
agents:
  support:
    system_prompt: You help.
    channels: [slack]
{more_yaml}""", encoding="utf-8")
    log = tmp_path / f"{name}.log"
    sink = log.open("wb")
    process = await spawn("run", str(config), cwd=tmp_path,
        env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
             # the code under test, when it is not the installed copy
             "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
             "SLACK_BOT_TOKEN": rig.slack.bot_token,
             "SLACK_SIGNING_SECRET": rig.slack.signing_secret},
        stdout=subprocess.DEVNULL, stderr=sink)
    sink.close()
    await until(lambda: logged(log, "runtime.started") or process.returncode is not None)
    assert process.returncode is None, log.read_text()
    return Worker(process, f"http://127.0.0.1:{port}/slack/events", log)


@pytest.fixture
async def rig(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest
              ) -> AsyncIterator[Rig]:
    """Two workers; `request.param`, when a test gives one, is YAML added to their config."""
    url = make_url(pg_url)
    proxy = TcpProxy(url.port or 5432)
    await proxy.start()
    store_url = url.set(port=proxy.port).render_as_string(hide_password=False)
    async with FakeSlack() as slack, FakeAnthropic() as anthropic:
        anthropic.responder = answer_the_newest_question
        made = Rig(slack, anthropic, proxy, [], pg_url)
        try:
            for name in ("a", "b"):
                made.workers.append(await start_worker(
                    tmp_path, name, store_url, made,
                    more_yaml=getattr(request, "param", "")))
            yield made
        finally:
            for worker in made.workers:
                if worker.process.returncode is None:
                    worker.process.send_signal(signal.SIGTERM)
                    try:
                        async with asyncio.timeout(30):
                            await worker.process.wait()
                    except TimeoutError:
                        worker.process.kill()
                        await worker.process.wait()
            await proxy.stop()


async def answered(rig: Rig, *tags: str) -> None:
    try:
        await until(lambda: all(f"answer {t}" in rig.answers() for t in tags), within=30)
    except TimeoutError:
        logs = "\n".join(w.log.read_text()[-3000:] for w in rig.workers)
        raise AssertionError(f"answers so far: {rig.answers()}\n{logs}") from None


async def test_slack_retries_reaching_the_other_process_are_not_answered_twice(
        rig: Rig) -> None:
    for n in range(5):
        event = rig.event(f"question q{n}", thread=rig.slack.next_ts())
        status, event_id = await rig.send(n % 2, event)
        assert status == 200
        # Slack thought the acknowledgement late and retries, through the other process.
        retry, _ = await rig.send(1 - n % 2, event, event_id=event_id, retry_num=1)
        assert retry == 200
    await answered(rig, *(f"q{n}" for n in range(5)))
    await rig.settled()
    assert max(rig.answers().values()) == 1, rig.answers()


async def test_with_the_store_down_no_process_answers_and_the_retry_after_it_is_answered_once(
        rig: Rig) -> None:
    await rig.proxy.stop()
    attempts = []
    for n in range(3):
        event = rig.event(f"question q{n}", thread=rig.slack.next_ts())
        _, event_id = await rig.send(0, event)
        await rig.send(1, event, event_id=event_id, retry_num=1)
        attempts.append((event, event_id))
    await asyncio.sleep(1.0)
    assert rig.answers() == Counter()
    await rig.proxy.start()
    for event, event_id in attempts:  # Slack's later retries, to both
        for worker in (1, 0):
            status, _ = await rig.send(worker, event, event_id=event_id, retry_num=2)
            assert status == 200
    await answered(rig, "q0", "q1", "q2")
    await rig.settled()
    assert max(rig.answers().values()) == 1, rig.answers()


async def test_one_conversation_alternating_between_processes_keeps_its_order(
        rig: Rig) -> None:
    thread = rig.slack.next_ts()
    for n in range(6):
        status, _ = await rig.send(n % 2, rig.event(f"question q{n}", thread=thread))
        assert status == 200
        await answered(rig, f"q{n}")
    prompts = {newest_question(body): json.dumps(body["messages"])
               for body in rig.anthropic.bodies}
    assert sorted(prompts) == [f"q{n}" for n in range(6)]
    for n in range(1, 6):
        assert f"answer q{n - 1}" in prompts[f"q{n}"], f"the prompt for q{n} lacks answer q{n-1}"
    assert max(rig.answers().values()) == 1


async def test_a_process_killed_holding_a_conversation_leaves_it_to_the_other(
        rig: Rig) -> None:
    thread = rig.slack.next_ts()
    status, _ = await rig.send(0, rig.event("question q90", thread=thread))  # A thinks long
    assert status == 200
    await rig.anthropic.wait_for_requests(1)
    status, _ = await rig.send(1, rig.event("question q91", thread=thread))  # A owns it
    assert status == 200
    rig.workers[0].process.send_signal(signal.SIGKILL)
    await rig.workers[0].process.wait()
    await answered(rig, "q90", "q91")
    assert max(rig.answers().values()) == 1
    assert logged(rig.workers[1].log, "pipeline.open_turns_found") or logged(
        rig.workers[1].log, "turn.done")
