"""After `threadline people forget`, nothing returns the person's words; everyone else's stay.

Real agents (the offline model, whose replies quote the message they answer) with an extractive
summarizer and the reply recorder answer Ann and Bob in a shared room and Ann in a DM, on a
SQLite file and on PostgreSQL, through the turn pipeline (inbox, deliveries, replies). Then the
`threadline people forget` command runs in-process. Ann's words are gone from search, person
memory, summaries, reply records, inbox rows, deliveries, the outbox file, an export, the FTS5
tables and the stored tsvector; Bob's turns and the agents' replies to him are all still there.
"""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from threadline.agents import Agent, OfflineModel
from threadline.agents.agent import Memory
from threadline.agents.summarizer import ExtractiveSummarizer
from threadline.backends.parts import people_for, records_for
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.database_url import sqlite_file
from threadline.channels.local import LocalChannel
from threadline.cli import main as threadline
from threadline.history.assembler import AssemblerOptions
from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.inspector import ReplyRecorder
from threadline.interceptors.outbox import Outbox
from threadline.people import person_memory_for
from threadline.people.erase import export_person
from threadline.team import Team

SECRET = "zanzibar"  # only Ann ever says it
BOB_WORD = "quokka"  # only Bob ever says it
ANN = Participant(kind="user", id="ann", display_name="ann")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("pg_url"))


async def _conversations(url: str) -> None:
    async with SqlConversationStore(url) as store:
        recorder = ReplyRecorder(records_for(store))
        support = Agent(name="support", conversation_history=store, provider=OfflineModel(),
                        observer=recorder,
                        memory=Memory(options=AssemblerOptions(rolling_summary_threshold=4,
                                                               person_memory=True),
                                      summarizer=ExtractiveSummarizer()))
        team = Team([support])
        room = LocalChannel(name="local", room="shop")
        team.attach(room, respond_to_all=["support"])
        await team.start()
        try:
            for n in range(4):
                await room.say(f"my gate code word is {SECRET} number {n}", user="ann")
                await room.say(f"I keep a pet {BOB_WORD} called number {n}", user="bob")
            direct = room.message(f"in private: {SECRET} is also my wifi password", user="ann")
            await team.handle(replace(direct, conversation_id="local:ann-dm", scope="dm",
                                      metadata=MessageMetadata(channel_type="local",
                                                               message_id="dm-1")), room)
            await recorder.flush()
        finally:
            await team.stop()


async def _raw(url: str, sql: str) -> list[tuple[object, ...]]:
    """Rows read straight from the database, past every store method."""
    path = sqlite_file(url)
    if path is not None:  # the stdlib driver: the store itself needs no async SQLite driver
        def read() -> list[tuple[object, ...]]:
            with closing(sqlite3.connect(path)) as connection:
                return [tuple(r) for r in connection.execute(sql).fetchall()]

        return await asyncio.to_thread(read)
    base, _, options = url.partition("?")
    schema = options.rsplit("search_path=", 1)[-1]
    engine = create_async_engine(base, connect_args={"server_settings": {"search_path": schema}})
    try:
        async with engine.connect() as connection:
            return [tuple(r) for r in (await connection.execute(text(sql))).all()]
    finally:
        await engine.dispose()


async def test_forget_removes_the_persons_words_everywhere(db_url: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    await _conversations(db_url)
    outbox_path = tmp_path / "outbox.jsonl"
    leftover = StoredMessage(conversation_id="local:shop", participant=ANN,
                             content=f"queued: {SECRET} again", metadata={"message_id": "q1"})
    await Outbox(outbox_path).add([leftover])

    # The words are there before: in turns, replies, summaries, records, inbox and indexes.
    assert await _raw(db_url, f"SELECT count(*) FROM threadline_messages WHERE content LIKE "
                              f"'%{SECRET}%' AND is_summary = true") != [(0,)]
    assert await _raw(db_url, f"SELECT count(*) FROM threadline_reply_records WHERE detail_json "
                              f"LIKE '%{SECRET}%'") != [(0,)]
    assert await _fts_hits(db_url, SECRET) > 0

    dry_run = ["people", "forget", "local:ann", "--url", db_url]
    assert await asyncio.to_thread(threadline, dry_run) == 0
    assert "run again with --yes" in capsys.readouterr().err
    assert await _fts_hits(db_url, SECRET) > 0  # a dry run deletes nothing

    assert await asyncio.to_thread(threadline, ["people", "forget", "local:ann", "--url", db_url,
                                                "--outbox", str(outbox_path), "--yes"]) == 0
    said = capsys.readouterr().err
    assert "forgot identity-" in said and "5 turns" in said and "1 outbox" in said

    for table, column in (("threadline_messages", "content"),
                          ("threadline_reply_records", "detail_json"),
                          ("threadline_reply_records", "reply"),
                          ("threadline_inbox", "message_json"),
                          ("threadline_deliveries", "message_json")):
        assert await _raw(db_url, f"SELECT count(*) FROM {table} WHERE {column} LIKE "
                                  f"'%{SECRET}%'") == [(0,)], (table, column)
    assert await _fts_hits(db_url, SECRET) == 0
    assert SECRET not in outbox_path.read_text()
    [(audit,)] = await _raw(db_url, "SELECT counts_json FROM threadline_forget_audit")
    counts = json.loads(str(audit))
    assert counts["turns"] == 5 and counts["outbox"] == 1 and counts["replies"] >= 5
    assert SECRET not in str(audit) and "ann" not in str(audit)

    async with SqlConversationStore(db_url) as store:
        assert await store.search_context("local:shop", f"gate code {SECRET}") == []
        bob_windows = await store.search_context("local:shop", f"pet {BOB_WORD}", limit=10)
        bob_turns = {m.content for w in bob_windows for m in w.messages
                     if m.participant.id == "bob"}
        assert bob_turns == {f"I keep a pet {BOB_WORD} called number {n}" for n in range(4)}
        shop = await store.get("local:shop", include_summaries=True)
        assert not any(SECRET in m.content for m in shop)
        bob_ids = {m.id for m in shop if m.participant.id == "bob"}
        assert len(bob_ids) == 4
        answers_to_bob = [m for m in shop if m.id.partition(">")[0] in bob_ids
                          and m.participant.kind == "agent"]
        assert len(answers_to_bob) == 4
        asking = StoredMessage(conversation_id="local:ann-dm-2", participant=ANN,
                               content=f"what was my {SECRET} code", scope="dm")
        memory = await person_memory_for(store, asking)
        assert memory is not None and await memory.search(SECRET) == []
        exported = io.StringIO()
        counts = await export_person(store, "local:ann", exported)
        assert counts["turns"] == 0 and SECRET not in exported.getvalue()
        assert await people_for(store).person_of("local:ann") is None


async def _fts_hits(url: str, word: str) -> int:
    """Matches in the full-text indexes themselves: FTS5 tables on SQLite, the tsvector on
    PostgreSQL."""
    if url.startswith("sqlite"):
        [(words,)] = await _raw(url, "SELECT count(*) FROM threadline_messages_fts WHERE "
                                     f"threadline_messages_fts MATCH '{word}'")
        [(grams,)] = await _raw(url, "SELECT count(*) FROM threadline_messages_trigram WHERE "
                                     f"threadline_messages_trigram MATCH '{word}'")
        return int(str(words)) + int(str(grams))
    [(vectors,)] = await _raw(url, "SELECT count(*) FROM threadline_messages WHERE "
                                   f"search_vector @@ to_tsquery('english', '{word}')")
    return int(str(vectors))
