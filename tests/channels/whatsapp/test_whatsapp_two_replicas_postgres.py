"""Two `threadline run` replicas of one WhatsApp number on one PostgreSQL database, behind one
callback URL: whichever replica Meta reaches, each message is answered once, a conversation's
answers keep their order (each prompt holds the answer the other replica just gave), and a
webhook delivered again to the other replica is not answered twice."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.channels.whatsapp.conftest import ANA
from tests.channels.whatsapp.run_rig import whatsapp_platform
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.whatsapp import FakeWhatsApp
from tests.runtime.platforms import write_config
from tests.runtime.test_run_kill9_answers_everything import start

pytestmark = pytest.mark.postgres
_TAG = re.compile(r"q\d+")


def newest_question(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    words = last if isinstance(last, str) else " ".join(
        b.get("text", "") for b in last if isinstance(b, dict))
    return str(_TAG.findall(words)[-1])


async def test_two_replicas_answer_each_message_once_in_order(tmp_path: Path,
                                                              pg_url: str) -> None:
    async with FakeWhatsApp() as fake, FakeAnthropic() as model:
        model.responder = lambda body: text(f"answer {newest_question(body)}", delay=0.1)
        replicas, urls = [], []
        try:
            for name in ("a", "b"):
                folder = tmp_path / name
                folder.mkdir()
                where = whatsapp_platform(fake)
                config = write_config(folder, "whatsapp", where, model.url)
                config.write_text(re.sub(r"url: sqlite\S+", f"url: {pg_url}",
                                         config.read_text()), encoding="utf-8")
                replicas.append(await start(config, where, folder / "run.log"))
                urls.append(where.extra["webhook_url"])
            bodies = [fake.text_message(ANA, f"question q{n}") for n in range(6)]
            for n, body in enumerate(bodies):  # one conversation, alternating replicas
                assert await fake.deliver(urls[n % 2], body) == (200, "ok")
                await fake.wait_for_sent(n + 1, within=30)
            for n, body in enumerate(bodies):  # each delivered again, to the other replica
                assert await fake.deliver(urls[(n + 1) % 2], body) == (200, "ok")
            await asyncio.sleep(1.5)  # time for a second answer to show up
        finally:
            for replica in replicas:
                replica.send_signal(signal.SIGTERM)
            for replica in replicas:
                try:
                    async with asyncio.timeout(30):
                        await replica.wait()
                except TimeoutError:
                    replica.kill()
                    await replica.wait()
        assert Counter(s.text for s in fake.sent) == Counter(f"answer q{n}" for n in range(6))
        prompts = {newest_question(b): json.dumps(b["messages"]) for b in model.bodies}
        assert sorted(prompts) == [f"q{n}" for n in range(6)]
        for n in range(1, 6):
            assert f"answer q{n - 1}" in prompts[f"q{n}"], f"q{n}'s prompt lacks answer q{n-1}"
