"""`threadline run` against fake platforms and a fake Anthropic API, stopped by SIGTERM mid-turn.

Three people write at once, in three conversations; while all three model calls are still being
answered the process gets SIGTERM. It must finish those turns: every inbound message and every
reply is in the store, every reply reached the platform, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, text
from tests.launch import spawn
from tests.runtime.platforms import (
    PEOPLE,
    platform,
    replies_sent,
    say,
    wait_for_log,
    write_config,
)
from threadline.backends.sql.store import SqlConversationStore


@pytest.mark.parametrize("name", ["telegram", "slack", "discord"])
async def test_sigterm_mid_conversation_loses_nothing(tmp_path: Path, name: str) -> None:
    db = tmp_path / "threadline.db"
    async with platform(name) as where, FakeAnthropic() as anthropic:
        # Each answer is held back long enough for SIGTERM to arrive while it is pending.
        anthropic.script(*(text(f"answer {n}", delay=1.0) for n in range(PEOPLE)))
        config = write_config(tmp_path, name, where, anthropic.url)
        process = await spawn("run", str(config), cwd=tmp_path,
            env={"PATH": str(Path(sys.executable).parent), "ANTHROPIC_API_KEY": "test-key",
                 # the code under test, when it is not the installed copy
                 "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **where.env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr is not None
        try:
            await wait_for_log(process.stderr, "runtime.started")
            for person in range(PEOPLE):
                await say(name, where, person, f"hello, I am person {person}")
            await anthropic.wait_for_requests(PEOPLE)  # all three turns are in flight
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                _, rest = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, rest.decode()
        assert sorted(replies_sent(name, where)) == [f"answer {n}" for n in range(PEOPLE)]

    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        conversations = await store.list_conversations()
        assert len(conversations) == PEOPLE
        said = []
        for info in conversations:
            turns = await store.get(info.conversation_id)
            assert [t.participant.kind for t in turns] == ["user", "agent"]
            said.append(turns[0].content.split("hello, ")[1])
            assert turns[1].content.startswith("answer ")
        assert sorted(said) == [f"I am person {n}" for n in range(PEOPLE)]
    outbox = tmp_path / "threadline.db.outbox.jsonl"
    assert not outbox.exists() or outbox.stat().st_size == 0
