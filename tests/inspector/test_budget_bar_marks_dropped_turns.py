"""The record page's budget bar marks the turns dropped for the budget (they used to leave no
trace on it: only the counts line below said so)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp import web

from threadline.agents import Agent, OfflineModel
from threadline.agents.agent import Memory
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.records import SqlReplyRecords
from threadline.history.assembler import AssemblerOptions
from threadline.history.model import Participant, StoredMessage
from threadline.inspector import ReplyRecorder
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.redaction import Redactor

LONG = "the parcel went from the depot to the sorting centre and then back again " * 8


async def record_page(records: SqlReplyRecords, store: SqlConversationStore,
                      record_id: str) -> str:
    runner = web.AppRunner(standalone_app(console_app(
        records=records, store=store, redactor=Redactor())))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/console/records/{record_id}"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await response.text()
    finally:
        await runner.cleanup()


async def test_dropped_turns_are_marked_at_the_bars_end(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        records = SqlReplyRecords(store)
        recorder = ReplyRecorder(records)
        agent = Agent(name="support", conversation_history=store, provider=OfflineModel(),
                      observer=recorder, memory=Memory(options=AssemblerOptions(token_budget=400)))
        for words in (f"@support {LONG}", f"@support {LONG}", f"@support {LONG}", "@support hi"):
            await agent.invoke(StoredMessage(conversation_id="local:desk", content=words,
                                             participant=Participant(kind="user", id="ada")))
        await recorder.close()
        await agent.close()
        first, *_, newest = reversed(await records.recent())
        newest_whole = await records.get(newest.id)
        assert newest_whole is not None and newest_whole.detail is not None
        assert newest_whole.detail["prompt"]["dropped_for_budget_ids"]
        dropping = await record_page(records, store, newest.id)
        keeping = await record_page(records, store, first.id)
    assert '<rect class="dropped"' in dropping and '<span class="key dropped">' in dropping
    assert '<rect class="dropped"' not in keeping
