"""Shared fixtures: real stores on real SQLite files and on the machine's PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import structlog

from tests.launch import warm_up
from threadline.backends.sql import SqlConversationStore
from threadline.history import InMemoryConversationStore
from threadline.history.store import ConversationStore

PG_URL = os.environ.get("THREADLINE_TEST_PG_URL")
REQUIRE_PG = os.environ.get("THREADLINE_REQUIRE_PG") == "1"


def pg_url_or_skip() -> str:
    """The PostgreSQL URL for tests, or a skip that says how to enable them."""
    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("THREADLINE_REQUIRE_PG=1 but THREADLINE_TEST_PG_URL is not set")
        pytest.skip("PostgreSQL tests need THREADLINE_TEST_PG_URL "
                    "(for example postgresql+asyncpg://postgres@127.0.0.1:5432/test)")
    return PG_URL


async def fresh_pg_schema(url: str) -> str:
    """A new, empty PostgreSQL schema for one test; returns a URL whose search_path uses it."""
    import asyncpg

    name = "t_" + uuid.uuid4().hex[:12]
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(f"CREATE SCHEMA {name}")
    finally:
        await connection.close()
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}search_path={name}"


async def drop_pg_schema(url: str) -> None:
    import asyncpg

    base, _, options = url.partition("?")
    name = options.rsplit("search_path=", 1)[-1]
    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    finally:
        await connection.close()


def pytest_sessionstart(session: pytest.Session) -> None:
    """An xdist worker starts its `threadline` launcher (`tests.launch`) at once, so the
    launcher's imports overlap the worker's first tests."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        warm_up()


@pytest.fixture(autouse=True)
def isolated_logging() -> Iterator[None]:
    """Commands run in-process configure logging; each test starts from structlog's defaults."""
    yield
    structlog.reset_defaults()


@pytest.fixture
async def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    url = await fresh_pg_schema(pg_url_or_skip())
    yield url
    await drop_pg_schema(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """Each SQL database's URL: a SQLite file, or a fresh PostgreSQL schema (dropped after)."""
    if request.param == "sqlite":
        return sqlite_url
    return str(request.getfixturevalue("pg_url"))


@asynccontextmanager
async def opened_store(kind: str, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    """A fresh store of `kind` ("memory", "sqlite" or "postgresql"), closed (and its
    PostgreSQL schema dropped) afterwards."""
    if kind == "memory":
        memory = InMemoryConversationStore()
        yield memory
        await memory.close()
        return
    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
        async with SqlConversationStore(url) as sqlite_store:
            yield sqlite_store
        return
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        async with SqlConversationStore(url) as pg_store:
            yield pg_store
    finally:
        await drop_pg_schema(url)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    """Every store, so one contract suite runs against all three."""
    async with opened_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=["sqlite", "postgresql"])
async def sql_store(request: pytest.FixtureRequest, tmp_path: Path
                    ) -> AsyncIterator[SqlConversationStore]:
    """Each SQL store, for the parts kept in the history's own database (inbox, spend)."""
    async with opened_store(request.param, tmp_path) as opened:
        assert isinstance(opened, SqlConversationStore)
        yield opened
