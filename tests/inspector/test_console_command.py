"""`threadline console CONFIG` serves the records of a config's database on its own, says
where, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
from pathlib import Path

import aiohttp

from tests.inspector.helpers import child_environment
from tests.launch import spawn
from threadline.agents import Agent, OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.records import SqlReplyRecords
from threadline.history.model import Participant, StoredMessage
from threadline.inspector import ReplyRecorder


async def test_the_console_alone_shows_a_configs_records(tmp_path: Path) -> None:
    db = tmp_path / "threadline.db"
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        recorder = ReplyRecorder(SqlReplyRecords(store))
        agent = Agent(name="support", conversation_history=store, provider=OfflineModel(),
                      observer=recorder)
        await agent.invoke(StoredMessage(conversation_id="local:desk", content="@support hi",
                                         participant=Participant(kind="user", id="ada")))
        await recorder.close()
        await agent.close()
    config = tmp_path / "threadline.yaml"
    config.write_text(f"store:\n  url: sqlite+aiosqlite:///{db}\n", encoding="utf-8")

    process = await spawn("console", str(config), "--port", "0", cwd=tmp_path,
        env=child_environment({}), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        async with asyncio.timeout(60):
            while True:
                line = (await process.stderr.readline()).decode()
                assert line, "threadline console exited before saying where it is"
                found = re.search(r"threadline console: (http://127\.0\.0\.1:\d+/console/)", line)
                if found:
                    break
        url = found.group(1)
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                assert response.status == 200
                assert "local:desk" in await response.text()
            async with session.get(url + "api/conversation?id=local:desk") as response:
                [record] = (await response.json())["records"]
            assert record["agent"] == "support" and record["addressed_because"] is None
            async with session.get(url + f"records/{record['id']}") as response:
                page = await response.text()
            assert "What <em>support</em> saw" in page and "Replay" in page  # agents known
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            await process.wait()
        assert process.returncode == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
