"""`threadline run` against fake Telegram and Anthropic servers, stopped by SIGTERM mid-turn.

Three people write at once; while all three model calls are still being answered the process
gets SIGTERM. It must finish those turns: every inbound message and every reply ends up in the
store, every reply reaches Telegram, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.helpers import THREADLINE
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.telegram import FakeTelegram, TgUser, private_chat
from threadline.history.sql_store import SqlConversationStore

PEOPLE = [TgUser(2001 + n, f"Person{n}", username=f"person{n}") for n in range(3)]


def write_config(tmp_path: Path, telegram: FakeTelegram, anthropic: FakeAnthropic) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
log:
  format: json
ops:
  port: 0
channels:
  telegram:
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
    base_file_url: {telegram.file_url}
agents:
  support:
    system_prompt: You help.
    channels: [telegram]
""", encoding="utf-8")
    return path


async def wait_for_log(stream: asyncio.StreamReader, event: str) -> None:
    async with asyncio.timeout(30):
        while True:
            line = await stream.readline()
            if not line:
                raise AssertionError(f"threadline exited before logging {event}")
            try:
                if json.loads(line).get("event") == event:
                    return
            except ValueError:
                continue


async def test_sigterm_mid_conversation(tmp_path: Path) -> None:
    async with FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        # Each answer is held back long enough for SIGTERM to arrive while it is pending.
        anthropic.script(*(text(f"answer {n}", delay=1.0) for n in range(3)))
        config = write_config(tmp_path, telegram, anthropic)
        process = await asyncio.create_subprocess_exec(
            str(THREADLINE), "run", str(config), cwd=tmp_path,
            env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
                 "TELEGRAM_BOT_TOKEN": telegram.token},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr is not None
        try:
            await wait_for_log(process.stderr, "runtime.started")
            for person in PEOPLE:
                await telegram.deliver(telegram.message(private_chat(person), person,
                                                        f"hello, I am {person.first_name}"))
            await anthropic.wait_for_requests(3)  # all three turns are in flight
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                _, rest = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, rest.decode()
        sent = telegram.calls_to("sendMessage")
        assert sorted(c.params["text"] for c in sent) == ["answer 0", "answer 1", "answer 2"]
        assert {int(c.params["chat_id"]) for c in sent} == {p.id for p in PEOPLE}

    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        for person in PEOPLE:
            turns = await store.get(f"telegram:{person.id}")
            assert [(t.participant.kind, t.content) for t in turns][0] == (
                "user", f"hello, I am {person.first_name}")
            assert [t.participant.kind for t in turns] == ["user", "agent"]
            assert turns[1].content.startswith("answer ")
    assert not (tmp_path / "threadline.db.outbox.jsonl").exists() or \
        (tmp_path / "threadline.db.outbox.jsonl").stat().st_size == 0
