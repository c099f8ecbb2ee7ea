"""A plain turn (one person, one agent, no tools, an instant model) costs a known number of SQL
statements and transactions, on SQLite and on PostgreSQL.

The counts are this file's own constants: a change that adds a statement to every turn fails
here, and whoever means it changes the constant with the reason beside it. Run with `-s` to see
the statements of the turn.

Counted: every statement the store (and on PostgreSQL, the conversation lock) sends, and every
transaction it opens (on PostgreSQL each costs a BEGIN and a COMMIT round trip of its own, and
the COMMIT waits for the disk; reads there run outside transactions), and on SQLite how many
of them were sent to the store's threads rather than run on the event loop. The turn counted is a
conversation's second, so the history and the recall index hold something; the team is stopped
inside the count, so nothing the turn left running escapes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import PostgresBackend, SqliteBackend
from threadline.backends.sql.locks import PostgresConversationLock
from threadline.backends.sql.sqlite import SqliteRunner
from threadline.locks import ConversationLock
from threadline.team import Team

# What one plain turn costs. Lower them when a change saves one; raise them only on purpose,
# with the reason here.
SQLITE_STATEMENTS = 16
# The reads of one statement on the event loop (the newest turns, the summary, the handoff)
# are their own snapshot, without BEGIN and ROLLBACK (`SqliteBackend.read_few`): not counted.
SQLITE_TRANSACTIONS = 9
# Of those, sent to the store's threads (each a hop costing more than a small statement): the
# recall search only; the other reads and writes touch a few rows and run on the event loop
# (`SqliteBackend.read_few`, `write_few`).
SQLITE_HOPS = 1
POSTGRES_STATEMENTS = 12
# The inbox's and the ledger's six writes are one statement each, sent without BEGIN and
# COMMIT (`operations.one_write`); the two history writes stay in transactions.
POSTGRES_TRANSACTIONS = 2

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")


@dataclass
class Tally:
    """The statements and transactions seen while counting."""

    counting: bool = False
    statements: list[str] = field(default_factory=list)
    transactions: int = 0
    hops: int = 0

    def statement(self, sql: str) -> None:
        if not self.counting:
            return
        words = sql.strip().upper()
        if words.startswith(_CONTROL):
            self.transactions += words.startswith("BEGIN")
        else:
            self.statements.append(" ".join(sql.split())[:160])

    def begun(self) -> None:
        if self.counting:
            self.transactions += 1

    def hopped(self) -> None:
        if self.counting:
            self.hops += 1

    def show(self, label: str) -> None:
        print(f"\n{label}: {len(self.statements)} statements in {self.transactions} "
              f"transactions, {self.hops} of them sent to a thread")
        for number, sql in enumerate(self.statements, 1):
            print(f"  {number:2d}. {sql}")


@contextmanager
def sqlite_traced(monkeypatch: pytest.MonkeyPatch, tally: Tally) -> Iterator[None]:
    """Every statement the store's runner sends and every transaction it opens (the sqlite3
    trace would also show the FTS triggers' own statements)."""
    for method in ("rows", "rowcount"):
        sent = getattr(SqliteRunner, method)

        def traced(runner: SqliteRunner, sql: str, params: Any, *, sent: Any = sent) -> Any:
            tally.statement(sql)
            return sent(runner, sql, params)

        monkeypatch.setattr(SqliteRunner, method, traced)
    for method in ("_commit_after", "_read_on"):  # every transaction, on the loop or not
        run = getattr(SqliteBackend, method)

        def transaction(*args: Any, run: Any = run) -> Any:
            tally.begun()
            return run(*args)

        monkeypatch.setattr(SqliteBackend, method, staticmethod(transaction))
    for method in ("read", "write"):  # the operations sent to the store's threads
        sent_off = getattr(SqliteBackend, method)

        async def hop(backend: SqliteBackend, *args: Any, sent_off: Any = sent_off) -> Any:
            tally.hopped()
            return await sent_off(backend, *args)

        monkeypatch.setattr(SqliteBackend, method, hop)
    yield


def postgres_traced(store: SqlConversationStore, lock: PostgresConversationLock,
                    tally: Tally) -> None:
    backend = store._backend
    assert isinstance(backend, PostgresBackend)
    for engine in (backend.alchemy_engine().sync_engine, lock._engine.sync_engine):
        @event.listens_for(engine, "before_cursor_execute")
        def before(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
            tally.statement(sql)

        @event.listens_for(engine, "begin")
        def begin(conn: Any) -> None:
            if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
                tally.begun()  # a read outside a transaction sends no BEGIN


async def one_plain_turn(store: SqlConversationStore, tally: Tally,
                         lock: ConversationLock | None = None) -> None:
    model = ScriptedModel()
    team = Team([Agent(name="support", conversation_history=store, provider=model)],
                lock=lock, scan_interval=3600)
    channel = RecordingChannel()
    team.attach(channel)
    await team.start()
    # Warm: the schema, the pools, the first turn of the conversation.
    await team.handle(say("@support where is my order 4401?", conversation_id="c1"), channel)
    while team.pipeline.owners.owned:  # noqa: ASYNC110 - its owner lets go of it
        await asyncio.sleep(0.01)
    tally.counting = True
    results = await team.handle(say("@support and order 4402?", conversation_id="c1"), channel)
    await team.stop()
    tally.counting = False
    assert [r.output for r in results] == ["re: Ann: @support and order 4402?"]
    assert [text for _, text, _ in channel.sent][-1] == "re: Ann: @support and order 4402?"


async def test_a_plain_turn_on_sqlite_costs_few_statements(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tally = Tally()
    with sqlite_traced(monkeypatch, tally):
        async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
            await one_plain_turn(store, tally)
    tally.show("SQLite")
    assert (len(tally.statements), tally.transactions) == (SQLITE_STATEMENTS,
                                                           SQLITE_TRANSACTIONS)
    assert tally.hops == SQLITE_HOPS


@pytest.mark.postgres
async def test_a_plain_turn_on_postgres_costs_few_statements(pg_url: str) -> None:
    tally = Tally()
    # A lively chat: the conversation is still held from its last turn (a turn after a pause
    # longer than the lock's linger also takes and gives back the lock: two more).
    lock = PostgresConversationLock(pg_url, linger=3600)
    async with SqlConversationStore(pg_url) as store:
        postgres_traced(store, lock, tally)
        await one_plain_turn(store, tally, lock)
    await lock.close()
    tally.show("PostgreSQL")
    assert (len(tally.statements), tally.transactions) == (POSTGRES_STATEMENTS,
                                                           POSTGRES_TRANSACTIONS)
