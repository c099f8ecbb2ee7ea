"""The file store on SQLite and PostgreSQL: each file kept once by hash, small ones in the
database and large ones on disk, read back whole, described once, and deleted only when no
stored turn names it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import drop_pg_schema, fresh_pg_schema, pg_url_or_skip
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.history.files import TurnFile, files_extra, sha256_of
from threadline.history.model import Participant, StoredMessage


@pytest.fixture(params=["sqlite", "postgresql"])
async def sql_store(request: pytest.FixtureRequest, tmp_path: Path
                    ) -> AsyncIterator[SqlConversationStore]:
    if request.param == "sqlite":
        async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'f.db'}") as store:
            yield store
        return
    url = await fresh_pg_schema(pg_url_or_skip())
    try:
        async with SqlConversationStore(url) as store:
            yield store
    finally:
        await drop_pg_schema(url)


async def test_files_are_kept_once_read_back_and_forgotten_when_unused(
        sql_store: SqlConversationStore, tmp_path: Path) -> None:
    files = SqlFileStore(sql_store, directory=tmp_path / "files", inline_max_bytes=100)
    small, large = b"%PDF-1.4 small\x00\xff", bytes(range(256)) * 4
    for data in (small, large, large):  # the large one twice: kept once
        await files.put(data, sha256=sha256_of(data), media_type="application/pdf")
    assert await files.get(sha256_of(small)) == small
    assert await files.get(sha256_of(large)) == large
    assert [p.name for p in (tmp_path / "files").iterdir()] == [sha256_of(large)]
    assert await files.get("0" * 64) is None

    await files.describe(sha256_of(large), "a table of bytes")
    assert await files.descriptions([sha256_of(large), sha256_of(small)]) == {
        sha256_of(large): "a table of bytes"}

    named = TurnFile(name="big.pdf", media_type="application/pdf", size=len(large),
                     sha256=sha256_of(large))
    await sql_store.append(StoredMessage(
        conversation_id="local:files", participant=Participant("user", "ann"),
        content="[document big.pdf]", metadata={"extra": files_extra([named])}))
    deleted = await SqlFileStore(sql_store).forget_unused([sha256_of(small), sha256_of(large)])
    assert deleted == 1  # the large one is still named by a stored turn
    assert await files.get(sha256_of(small)) is None
    assert await files.get(sha256_of(large)) == large
