"""A console started from a database alone (`threadline console --db`) cannot replay: the
record's page says so and how to get it, instead of leaving the form out silently."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp import web

from threadline.agents import Agent, OfflineModel
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.records import SqlReplyRecords
from threadline.history.model import Participant, StoredMessage
from threadline.inspector import ReplyRecorder
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.redaction import Redactor


async def test_a_console_without_the_config_says_what_replay_needs(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        records = SqlReplyRecords(store)
        recorder = ReplyRecorder(records)
        agent = Agent(name="support", conversation_history=store, provider=OfflineModel(),
                      observer=recorder)
        await agent.invoke(StoredMessage(conversation_id="local:desk", content="@support hi",
                                         participant=Participant(kind="user", id="ada")))
        await recorder.close()
        await agent.close()
        [record] = await records.recent()
        runner = web.AppRunner(standalone_app(console_app(
            records=records, store=store, redactor=Redactor())))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            url = f"http://127.0.0.1:{runner.addresses[0][1]}/console/records/{record.id}"
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                page = await response.text()
        finally:
            await runner.cleanup()
    assert "<h2>Replay</h2>" in page and "<form method=\"post\"" not in page
    assert "needs the agents'\nconfig" in page and "threadline console CONFIG" in page
