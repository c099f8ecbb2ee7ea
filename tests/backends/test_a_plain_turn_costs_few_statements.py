"""A plain turn (one person, one agent, no tools, an instant model) costs a known number of SQL
statements and transactions, on SQLite and on PostgreSQL.

The counts are this file's own constants: a change that adds a statement to every turn fails
here, and whoever means it changes the constant with the reason beside it. Run with `-s` to see
the statements of the turn.

Counted: every statement the store (and on PostgreSQL, the conversation lock) sends, every
transaction it opens (on PostgreSQL each costs a BEGIN and a COMMIT round trip of its own;
reads there run outside transactions), on PostgreSQL every commit: a transaction's, or a
write sent alone (autocommit). Each commit waits for the disk (about 1 to 4 ms here), which
makes commits, not statements, most of what a turn costs there. On SQLite, how many of the
transactions were sent to the store's threads rather than run on the event loop. The turn
counted is a conversation's second, so the history and the recall index hold something (on
SQLite recall searches only when the prompt leaves it a turn to show: the turns counted with
`recalled`); the team is stopped inside the count, so nothing the turn left running escapes
it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from asyncpg.connection import LoggedQuery

from tests.interceptors.scripted import RecordingChannel, ScriptedModel, say
from threadline.agents.agent import Agent, Memory
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import PostgresBackend, SqliteBackend
from threadline.backends.sql.locks import PostgresConversationLock
from threadline.backends.sql.pg_pool import PING
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.backends.sql.sqlite import SqliteRunner
from threadline.history.assembler import AssemblerOptions
from threadline.locks import ConversationLock
from threadline.spend import DailyBudgets
from threadline.spend.limit import SpendLimitInterceptor
from threadline.team import Team

# What one plain turn costs. Lower them when a change saves one; raise them only on purpose,
# with the reason here.
SQLITE_STATEMENTS = 12
# 15 before (and 6 transactions, 1 hop): a short conversation's every turn is in the prompt,
# and on SQLite the history is read before recall searches, so recall does not search
# (`assembler._recall_needless`). The turns below ask recall, in a conversation longer than
# the agent loads: RECALLED_STATEMENTS, RECALLED_TRANSACTIONS, SQLITE_HOPS.
SQLITE_TRANSACTIONS = 5
RECALLED_STATEMENTS = 15
# 16 before: recall looked for the row id above which a conversation's newest MAX_RANKED
# matches lie even when the conversation has fewer turns than that (`sqlite._search_sqlite`).
# 11 before: the reads of one statement on the event loop (the newest turns, the summary, the
# handoff) are their own snapshot, without BEGIN and ROLLBACK (`SqliteBackend.read_few`); and
# the delivered reply's ledger entry, its copy in the history and the turn marked answered are
# written in one transaction (`threadline.after_delivery`). 7 before the stored turn was read
# back by a SELECT of its row (one statement, on the loop) rather than an UPDATE.
RECALLED_TRANSACTIONS = 6
# Of those, sent to the store's threads (each a hop costing more than a small statement): the
# recall search only, as this turn asks about a word no search counted yet ("4402"); the other
# reads and writes touch a few rows and run on the event loop (`SqliteBackend.read_few`,
# `write_few`). A turn that recall does not search for takes none.
SQLITE_HOPS = 1
# A turn whose words an earlier search counted ("4401") is searched on the loop
# (`sqlite.searches_few`): no hop. The conversation's size is read before that search, a
# statement the search in a thread did not send (it planned with the size its conversation's
# last search remembered): 14 statements and 1 hop before, 15 and none now, as many as the
# turn above, whose thread counts its new word.
COUNTED_WORDS_HOPS = 0
COUNTED_WORDS_STATEMENTS = 15
POSTGRES_STATEMENTS = 12
# Writes of one statement alone are sent without BEGIN and COMMIT (`operations.one_write`):
# the inbox's two before the answer, the turn's copy in the history and the ledger's claim.
# The delivered reply's writes (ledger, history, inbox) are one transaction. 2 before the
# turn's copy (one statement since a replay claims no sequence) went alone.
POSTGRES_TRANSACTIONS = 1
# 8 before the delivered reply's writes shared one commit: the ledger's delivered and the
# inbox's answered were commits of their own; 6 before the turn stored was read back from the
# inbox by a SELECT rather than an UPDATE (a commit that changed nothing but a timestamp).
POSTGRES_COMMITS = 5
# Of those, the commits that wait for the disk: the turn recorded (before the platform is told
# 'received'), its copy in the history, and the reply's claim in the ledger (before it is
# posted). The take and the delivered reply's writes are covered by them
# (`operations.durable_later`); all five waited before.
POSTGRES_WAITED_COMMITS = 3
# A turn after a pause longer than the lock's linger also takes the conversation's advisory
# lock and gives it back: a statement each, on an autocommit connection (before, each was
# a transaction of its own: two BEGINs and two COMMITs more).
TAKES_THE_LOCK = 2
# With a spend ledger (no caps: nothing is reserved), a turn's spend is one statement more, in
# the delivered reply's transaction: no transaction or commit more.
WITH_SPEND = 1

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE)\b")  # a CTE's write too
# The start's scan for turns left from before (`Owners.scan`): a chore, not the turn's.
_SCAN = re.compile(r"FROM threadline_inbox WHERE .* GROUP BY conversation_id")


@dataclass
class Tally:
    """The statements and transactions seen while counting."""

    counting: bool = False
    statements: list[str] = field(default_factory=list)
    transactions: int = 0
    hops: int = 0
    commits: int = 0  # PostgreSQL: transactions, and writes sent alone
    waited: int = 0  # PostgreSQL: commits that wait for the disk
    scanned: bool = False  # the start's scan has read the inbox (counting or not)

    def statement(self, sql: str, *, alone: bool = False, waits: bool = True) -> None:
        self.scanned = self.scanned or bool(_SCAN.search(sql))
        if not self.counting:
            return
        words = sql.strip().upper()
        if words.startswith(_CONTROL):
            self.transactions += words.startswith("BEGIN")
        else:
            self.statements.append(" ".join(sql.split())[:160])
            committed = alone and bool(_WRITES.search(words))
            self.commits += committed
            self.waited += committed and waits

    def begun(self, *, waits: bool = True) -> None:
        if self.counting:
            self.transactions += 1
            self.commits += 1
            self.waited += waits

    def hopped(self) -> None:
        if self.counting:
            self.hops += 1

    def show(self, label: str) -> None:
        print(f"\n{label}: {len(self.statements)} statements in {self.transactions} "
              "transactions, " + (
                  f"{self.commits} commits ({self.waited} waiting for the disk)"
                  if label == "PostgreSQL" else f"{self.hops} sent to a thread"))
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
    """What crossed the wire: every statement the store's and the lock's asyncpg connections
    sent, BEGIN and COMMIT included, as the connections logged them."""
    backend = store._backend
    assert isinstance(backend, PostgresBackend)
    for pool, waits in ((backend._waiting, True), (backend._unwaited, False),
                        (lock._pool, True)):
        pool._connect = logged_connections(pool._connect, tally, waits=waits)


def logged_connections(connect: Callable[[], Awaitable[asyncpg.Connection]], tally: Tally, *,
                       waits: bool) -> Callable[[], Awaitable[asyncpg.Connection]]:
    """`connect`, each connection it opens telling `tally` every statement it sends."""

    async def logged() -> asyncpg.Connection:
        connection = await connect()
        in_transaction = False

        def sent(query: LoggedQuery) -> None:
            nonlocal in_transaction
            words = query.query.strip().upper()
            if words.startswith("BEGIN"):
                in_transaction = True
                tally.begun(waits=waits)
            elif words.startswith(("COMMIT", "ROLLBACK")):
                in_transaction = False
            elif query.query != PING:  # of a connection that sat idle: the clock's, not the turn's
                tally.statement(query.query, alone=not in_transaction, waits=waits)

        connection.add_query_logger(sent)
        return connection

    return logged


async def one_plain_turn(store: SqlConversationStore, tally: Tally,
                         lock: ConversationLock | None = None, *, spend: bool = False,
                         asks: str = "and order 4402?", recalled: bool = False) -> None:
    """The conversation's second turn, counted; `recalled`: the agent loads one turn, so
    the first is left to recall, which searches."""
    model = ScriptedModel()
    limits = [SpendLimitInterceptor(SqlSpendLedger(store), budgets=DailyBudgets())] if spend else []
    memory = Memory(AssemblerOptions(max_turns_to_load=1)) if recalled else None
    team = Team([Agent(name="support", conversation_history=store, provider=model,
                       interceptors=limits, memory=memory)],
                lock=lock, scan_interval=3600)
    channel = RecordingChannel()
    team.attach(channel)
    await team.start()
    # Warm: the schema, the pools, the first turn of the conversation.
    await team.handle(say("@support where is my order 4401?", conversation_id="c1"), channel)
    # Its owner lets go of it, and the start's scan (in a reader thread on SQLite, late on a
    # loaded machine) is done: counted, it once added a statement and a transaction.
    async with asyncio.timeout(30):
        while team.pipeline.owners.owned or not tally.scanned:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    tally.counting = True
    results = await team.handle(say(f"@support {asks}", conversation_id="c1"), channel)
    await team.stop()
    await asyncio.sleep(0)  # asyncpg calls a query logger soon after its statement, not in it
    tally.counting = False
    assert [r.output for r in results] == [f"re: Ann: @support {asks}"]
    assert [text for _, text, _ in channel.sent][-1] == f"re: Ann: @support {asks}"


@pytest.mark.parametrize(("spend", "asks", "recalled", "cost"), [
    (False, "and order 4402?", False, (SQLITE_STATEMENTS, SQLITE_TRANSACTIONS, 0)),
    (True, "and order 4402?", False,
     (SQLITE_STATEMENTS + WITH_SPEND, SQLITE_TRANSACTIONS, 0)),
    # Recall searches: for a word no search counted yet, in a thread; for counted words, not.
    (False, "and order 4402?", True, (RECALLED_STATEMENTS, RECALLED_TRANSACTIONS, SQLITE_HOPS)),
    (False, "and order 4401?", True,
     (COUNTED_WORDS_STATEMENTS, RECALLED_TRANSACTIONS, COUNTED_WORDS_HOPS)),
], ids=["plain", "with_spend", "recalled_new_word", "recalled_counted_words"])
async def test_a_plain_turn_on_sqlite_costs_few_statements(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spend: bool, asks: str,
        recalled: bool, cost: tuple[int, int, int]) -> None:
    tally = Tally()
    with sqlite_traced(monkeypatch, tally):
        async with SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
            await one_plain_turn(store, tally, spend=spend, asks=asks, recalled=recalled)
    tally.show("SQLite")
    assert (len(tally.statements), tally.transactions, tally.hops) == cost


@pytest.mark.postgres
@pytest.mark.parametrize(("spend", "paused"), [(False, False), (True, False), (False, True)],
                         ids=["plain", "with_spend", "after_a_pause"])
async def test_a_plain_turn_on_postgres_costs_few_statements(pg_url: str, spend: bool,
                                                             paused: bool) -> None:
    tally = Tally()
    # A lively chat: the conversation is still held from its last turn. After a pause (no
    # linger here) the turn takes the lock and gives it back.
    lock = PostgresConversationLock(pg_url, linger=0 if paused else 3600)
    async with SqlConversationStore(pg_url) as store:
        postgres_traced(store, lock, tally)
        await one_plain_turn(store, tally, lock, spend=spend)
    await lock.close()
    tally.show("PostgreSQL")
    assert (len(tally.statements), tally.transactions, tally.commits, tally.waited) == (
        POSTGRES_STATEMENTS + spend * WITH_SPEND + paused * TAKES_THE_LOCK,
        POSTGRES_TRANSACTIONS, POSTGRES_COMMITS, POSTGRES_WAITED_COMMITS)
