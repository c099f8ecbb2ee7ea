"""`threadline demo` says where its console is, and the records there are the demo's turns."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from tests.cli.helpers import run_process
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.records import SqlReplyRecords

SCRIPT = "@support my order is 4417-B\n@billing the invoice for 4417-B, please\n"


async def test_the_demo_points_to_its_console_and_records_every_reply(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_text(SCRIPT, encoding="utf-8")
    db = tmp_path / "demo.db"
    outcome = await asyncio.to_thread(run_process, "demo", "--script", "lines.txt", "--db",
                                      str(db), cwd=tmp_path)
    assert outcome.code == 0, outcome.err
    where = re.search(r"What each agent saw, reply by reply, and replay: "
                      r"http://127\.0\.0\.1:\d+/console/ \(while the demo runs; afterwards, "
                      r"without replay: \S*threadline console --db (\S+)\)", outcome.out)
    assert where is not None, outcome.out
    assert where.group(1) == str(db)

    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        records = await SqlReplyRecords(store).recent()
        turns = await store.get("local:demo")
    assert [(r.agent, r.addressed_because, r.conversation_id) for r in reversed(records)] == [
        ("support", "mention", "local:demo"), ("billing", "mention", "local:demo")]
    replies = [t for t in turns if t.participant.kind == "agent"]
    assert [r.outbound_id for r in reversed(records)] == [t.id for t in replies]
    assert [r.reply for r in reversed(records)] == [t.content for t in replies]
