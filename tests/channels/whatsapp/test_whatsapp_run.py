"""`threadline run` with a WhatsApp number, end to end over real sockets: two agents on one
number answer only what is addressed to them; kill -9 mid-reply loses and repeats nothing;
a scheduled post to a customer silent for 25 hours is not sent, and says why."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from tests.channels.whatsapp.conftest import ANA, BO
from tests.channels.whatsapp.run_rig import log_events, whatsapp_platform
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.whatsapp import Customer, FakeWhatsApp
from tests.runtime.platforms import write_config
from tests.runtime.test_run_kill9_answers_everything import (
    logged,
    start,
    uncertain_questions,
    until,
)
from threadline.backends.sql.store import SqlConversationStore

_TAG = re.compile(r"q\d+-\d+")


def _last_words(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    return last if isinstance(last, str) else " ".join(
        b.get("text", "") for b in last if isinstance(b, dict))


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(60):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_a_message_addressed_to_one_of_two_agents_is_answered_by_that_one_only(
        tmp_path: Path) -> None:
    async with FakeWhatsApp() as fake, FakeAnthropic() as model:
        model.responder = lambda body: text(
            "sales here" if "You sell." in json.dumps(body.get("system")) else "support here")
        where = whatsapp_platform(fake)
        config = write_config(tmp_path, "whatsapp", where, model.url)
        config.write_text(config.read_text().replace(
            "    channels: [whatsapp]\n",
            "    channels: [whatsapp]\n  sales:\n    system_prompt: You sell.\n"
            "    channels: [whatsapp]\n"), encoding="utf-8")
        process = await start(config, where, tmp_path / "run.log")
        try:
            url = where.extra["webhook_url"]
            assert await fake.deliver(url, fake.text_message(ANA, "sales: do you ship?")) == (
                200, "ok")
            [first] = await fake.wait_for_sent(1, within=30)
            assert await fake.deliver(url, fake.text_message(BO, "my order is late")) == (
                200, "ok")
            await fake.wait_for_sent(2, within=30)
            assert await fake.deliver(url, fake.text_message(
                ANA, "and to Lyon?", context=first.wamid)) == (200, "ok")  # a reply to sales
            await fake.wait_for_sent(3, within=30)
            await asyncio.sleep(1.0)  # time for a second, wrong answer to show up
        finally:
            await _stop(process)
        assert [(s.to, s.text) for s in fake.sent] == [
            (ANA.wa_id, "*sales*: sales here"), (BO.wa_id, "*support*: support here"),
            (ANA.wa_id, "*sales*: sales here")]
        assert len(model.bodies) == 3


async def test_kill_9_mid_reply_then_restart_answers_every_message_once(tmp_path: Path) -> None:
    people = [Customer(f"3460000000{n}", f"Person{n}") for n in range(3)]
    questions = [(p, f"q{n}-{i}") for i in range(4) for n, p in enumerate(people)]
    expected = {tag for _, tag in questions}
    async with FakeWhatsApp() as fake, FakeAnthropic() as model:
        model.responder = lambda body: text(
            f"answer {_TAG.findall(_last_words(body))[-1]}", delay=0.4)
        where = whatsapp_platform(fake, extra="    typing: false\n")
        config = write_config(tmp_path, "whatsapp", where, model.url)
        url = where.extra["webhook_url"]
        delivered: list[dict[str, Any]] = []  # every body Meta was told "ok" for
        unacknowledged: list[dict[str, Any]] = []
        first = await start(config, where, tmp_path / "first.log")
        alive = True

        async def stream() -> None:
            while questions and alive:
                person, tag = questions.pop(0)
                body = fake.text_message(person, f"question {tag}")
                try:
                    status, _ = await fake.deliver(url, body)
                except (OSError, aiohttp.ClientConnectionError):
                    status = 0  # the process died while it read this one: Meta keeps it
                (delivered if status == 200 else unacknowledged).append(body)
                await asyncio.sleep(0.05)

        sender = asyncio.ensure_future(stream())
        try:
            await until(lambda: len(fake.sent) >= 2)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            alive = False
            await sender
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
        assert questions or unacknowledged or len(fake.sent) < len(expected), (
            "the kill came too late to test anything")
        second = await start(config, where, tmp_path / "second.log")
        try:
            # Meta retries what was not answered 200; the rest of the stream arrives now.
            for body in unacknowledged + [fake.text_message(p, f"question {t}")
                                          for p, t in questions]:
                assert await fake.deliver(url, body) == (200, "ok")
            # ...and a duplicate of everything acknowledged (a confused proxy): dropped.
            for body in delivered:
                assert await fake.deliver(url, body) == (200, "ok")
            # A reply the first process claimed and may have posted when it died is not
            # posted again (WhatsApp has no idempotent send): the pipeline says so instead
            # (`pipeline.delivery_uncertain`, docs/platforms/whatsapp.md). Every other
            # question is answered.
            def uncertain() -> set[str]:
                return uncertain_questions(tmp_path / "second.log", tmp_path / "threadline.db")

            def settled() -> bool:
                return expected - {s.text.split()[-1] for s in fake.sent} <= uncertain()

            try:
                await until(settled)
            except TimeoutError:
                raise AssertionError(f"answered {sorted(s.text for s in fake.sent)}:\n"
                                     f"{(tmp_path / 'second.log').read_text()[-4000:]}") from None
            await asyncio.sleep(1.5)  # time for a repeated answer to show up
        finally:
            await _stop(second)
        answered = Counter(s.text for s in fake.sent)
        assert max(answered.values()) == 1, answered  # never twice
        assert set(answered) <= {f"answer {tag}" for tag in expected}, answered
        assert expected - {text.split()[-1] for text in answered} <= uncertain(), answered
        store = SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}")
        async with store:
            for person in people:
                turns = await store.get(f"whatsapp:{fake.phone_number_id}:{person.wa_id}")
                asked = [t.content for t in turns if t.participant.kind == "user"]
                assert len(asked) == len(set(asked)) == 4  # each stored once, in order
                assert asked == sorted(asked, key=lambda q: int(q.split("-")[-1]))


async def test_a_scheduled_post_outside_the_24_hour_window_is_not_sent_and_says_why(
        tmp_path: Path) -> None:
    async with FakeWhatsApp() as fake, FakeAnthropic() as model:
        model.responder = lambda body: text("Thanks for writing.")
        where = whatsapp_platform(fake)
        config = write_config(tmp_path, "whatsapp", where, model.url)
        # First run: Ana last wrote 25 hours ago (the webhook came late: her message's own
        # time counts), Bo an hour ago.
        process = await start(config, where, tmp_path / "first.log")
        try:
            url = where.extra["webhook_url"]
            await fake.deliver(url, fake.text_message(
                ANA, "is my order on its way?", sent_at=time.time() - 25 * 3600))
            await fake.deliver(url, fake.text_message(BO, "thanks!", sent_at=time.time() - 3600))
            await fake.wait_for_sent(1, within=30)  # Bo's answer; Ana's is refused
            await until(lambda: logged(tmp_path / "first.log", "whatsapp.outside_service_window"))
        finally:
            await _stop(process)
        assert [s.to for s in fake.sent] == [BO.wa_id]
        # Second run: the same schedule for both customers, due now.
        due = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="seconds")
        schedules = "".join(f"""\
  order-{person.name}:
    channel: whatsapp
    conversation: whatsapp:{fake.phone_number_id}:{person.wa_id}
    at: "{due}"
    message: Your order ships today.
""" for person in (ANA, BO))
        config.write_text(config.read_text() + f"schedules:\n{schedules}", encoding="utf-8")
        process = await start(config, where, tmp_path / "second.log")
        try:
            await fake.wait_for_sent(2, within=30)
            await until(lambda: logged(tmp_path / "second.log", "whatsapp.outside_service_window"))
            await asyncio.sleep(1.0)  # time for a wrong post to Ana to show up
        finally:
            await _stop(process)
        assert [(s.to, s.text) for s in fake.sent[1:]] == [(BO.wa_id, "Your order ships today.")]
        [refusal] = log_events(tmp_path / "second.log", "whatsapp.outside_service_window")
        assert "24-hour customer-service window" in refusal["error"]
        assert "window_template" in refusal["error"]
        store = SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}")
        async with store:
            turns = await store.get(f"whatsapp:{fake.phone_number_id}:{ANA.wa_id}")
        notes = [t.content for t in turns if t.participant.kind == "system"
                 and t.participant.id == "whatsapp"]
        assert len(notes) == 2 and all("not sent" in n for n in notes)  # reply and schedule
