"""The SQL store under faults: read-only files, held locks, a stopped or silent PostgreSQL.

Each fault must surface as a clear `StoreUnavailableError` quickly (every test is bounded by
`asyncio.timeout`), resolve every pending append, and leave the store usable once the fault
is gone. Hard text and query syntax that only PostgreSQL could trip over are covered here too.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect

from tests.fakes.tcp_proxy import TcpProxy
from tests.history.helpers import ANN, turn
from tests.ports import free_port
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.engines import _alembic_config, head_revision
from threadline.errors import ConfigError, StoreUnavailableError

FAST = 10  # seconds: a fault that takes longer than this to surface counts as a hang


async def _append_burst(store: SqlConversationStore, prefix: str, n: int) -> list[object]:
    """n concurrent appends (one group commit); every outcome, value or exception."""
    return await asyncio.gather(
        *(store.append(turn(f"{prefix} {i}", minute=i)) for i in range(n)),
        return_exceptions=True,
    )


# -- SQLite -------------------------------------------------------------------------------


async def test_read_only_sqlite_reads_and_refuses_writes_clearly(tmp_path: Path) -> None:
    path = tmp_path / "threadline.db"
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}") as writable:
        await writable.append(turn("written before", id="w1"))
    read_only = f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true"
    async with asyncio.timeout(FAST), SqlConversationStore(read_only) as store:
        assert [m.id for m in await store.get("c1")] == ["w1"]
        outcomes = await _append_burst(store, "refused", 5)
        assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
        assert "read-only" in str(outcomes[0]) and str(path) in str(outcomes[0])
        assert [m.id for m in await store.get("c1")] == ["w1"]  # still serving reads
        assert [h.id for h in await store.search("c1", "written")] == ["w1"]


async def test_read_only_sqlite_without_schema_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    store = SqlConversationStore(f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true")
    async with asyncio.timeout(FAST):
        with pytest.raises(StoreUnavailableError, match=r"read-only .*open it once read-write"):
            await store.count()
    await store.close()


async def test_lock_held_past_busy_timeout_fails_fast_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "threadline.db"
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}", busy_timeout=0.2) as store:
        await store.append(turn("before the lock", id="b1"))
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            async with asyncio.timeout(FAST):
                outcomes = await _append_burst(store, "while locked", 20)
            assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
            assert "lock" in str(outcomes[0]) and "busy timeout" in str(outcomes[0])
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        async with asyncio.timeout(FAST):
            assert await store.append(turn("after the lock", id="a1")) is True
            got = await store.get("c1")
        assert [m.id for m in got] == ["b1", "a1"]
        assert [m.sequence for m in got] == [1, 2]  # failed attempts took no sequence


async def test_missing_folder_is_named(tmp_path: Path) -> None:
    store = SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'nope' / 'threadline.db'}")
    with pytest.raises(StoreUnavailableError, match="does not exist"):
        await store.append(turn("lost?"))
    await store.close()


async def test_in_memory_sqlite_url_points_to_the_memory_store() -> None:
    with pytest.raises(ConfigError, match="InMemoryConversationStore"):
        SqlConversationStore("sqlite+aiosqlite:///:memory:")


async def test_a_database_from_the_first_migration_is_upgraded_not_dropped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "threadline.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        command.upgrade(_alembic_config(connection), "0001")
    engine.dispose()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO threadline_conversations VALUES ('c1', 1, 1, 0)")
    raw.execute(
        "INSERT INTO threadline_messages (id, conversation_id, conv_key, sequence, "
        "participant_kind, participant_id, participant_name, content, ts_us, scope, "
        "channel_type, mentions, is_summary, has_cjk, token_count) VALUES ('old-1', 'c1', "
        "'k', 1, 'user', 'U1', 'Ann', 'kept across upgrades', 0, 'channel', 'local', '', 0, 0, 5)"
    )
    raw.commit()
    raw.close()
    async with SqlConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        assert [m.id for m in await store.get("c1")] == ["old-1"]
        assert await store.append(turn("new", id="new-1"))
        assert [m.sequence for m in await store.get("c1")] == [1, 2]
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        assert "threadline_alembic_version" in inspect(connection).get_table_names()
        versions = connection.exec_driver_sql(
            "SELECT version_num FROM threadline_alembic_version").all()
    engine.dispose()
    assert [v[0] for v in versions] == [head_revision()]


# -- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture
async def pg_proxy(pg_url: str) -> AsyncIterator[tuple[TcpProxy, str]]:
    """A running proxy and a store URL that goes through it to the test's fresh schema."""
    from sqlalchemy import make_url

    url = make_url(pg_url)
    proxy = TcpProxy(url.port or 5432)
    await proxy.start()
    yield proxy, url.set(port=proxy.port).render_as_string(hide_password=False)
    await proxy.stop()


async def test_postgres_not_listening_fails_fast(pg_url: str) -> None:
    from sqlalchemy import make_url

    nowhere = make_url(pg_url).set(port=free_port()).render_as_string(hide_password=False)
    store = SqlConversationStore(nowhere, busy_timeout=1.0)
    async with asyncio.timeout(FAST):
        outcomes = await _append_burst(store, "nobody listens", 5)
        assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
        assert "reachable" in str(outcomes[0])
        with pytest.raises(StoreUnavailableError):
            await store.get("c1")
    await store.close()


async def test_postgres_stopped_and_back_the_store_recovers(
    pg_proxy: tuple[TcpProxy, str],
) -> None:
    proxy, url = pg_proxy
    async with asyncio.timeout(FAST * 2), SqlConversationStore(url, busy_timeout=1.0) as store:
        assert await store.append(turn("before the outage", id="p1"))
        await proxy.stop()
        outcomes = await _append_burst(store, "during the outage", 10)
        assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
        await proxy.start()
        assert await store.append(turn("after the outage", id="p2"))
        got = await store.get("c1")
        assert [m.id for m in got] == ["p1", "p2"]
        assert [m.sequence for m in got] == [1, 2]


async def test_postgres_that_accepts_but_never_answers_times_out(
    pg_proxy: tuple[TcpProxy, str],
) -> None:
    proxy, url = pg_proxy
    proxy.silent = True
    store = SqlConversationStore(url, busy_timeout=0.5)
    async with asyncio.timeout(FAST):
        with pytest.raises(StoreUnavailableError):
            await store.append(turn("into the void"))
    async with asyncio.timeout(FAST):
        await store.close()


@pytest.mark.parametrize("query", [
    "foo <-> bar", "a:*", "!!", "or or or", "-", "'", "\\", "& | !", "(a", "a) (",
    "'; DROP TABLE threadline_messages; --", "ship:A & !b", '"unclosed phrase', "\x00ship",
])
async def test_postgres_search_takes_any_query_text(pg_url: str, query: str) -> None:
    async with SqlConversationStore(pg_url) as store:
        await store.append(turn("ship foo bar a b <-> & | ! :* 'quoted'", id="s1"))
        hits = await store.search("c1", query)
        assert all(h.id == "s1" for h in hits)
        assert await store.count("c1") == 1


async def test_postgres_keeps_hard_text_and_finds_it(pg_url: str) -> None:
    big = ("lorem ipsum " * 8_400)[:100_000] + " needle"
    texts = {
        "big": big, "emoji": "emoji 🧵🤖👍🏽 family 👨‍👩‍👧", "rtl": "שלום עולם مرحبا بالعالم",
        "nul": "alpha\x00omega", "ops": "SELECT * FROM x; -- ' \" \\ <-> & | ! :* $1 %s",
    }
    async with SqlConversationStore(pg_url) as store:
        for key, text in texts.items():
            assert await store.append(turn(text, id=key, who=ANN))
        got = {m.id: m.content for m in await store.get("c1")}
        assert got["big"] == big and got["emoji"] == texts["emoji"] and got["rtl"] == texts["rtl"]
        assert got["nul"] == "alpha\ufffdomega" and got["ops"] == texts["ops"]
        assert [h.id for h in await store.search("c1", "needle", token_cap=100_000)] == ["big"]
        assert [h.id for h in await store.search("c1", "עולם")] == ["rtl"]
        assert [h.id for h in await store.search("c1", "omega")] == ["nul"]
