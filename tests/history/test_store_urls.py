"""A store URL says which database in plain terms: `sqlite:///PATH` is the default, an older
config's `sqlite+aiosqlite:///PATH` opens the same file, and anything else is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.history.helpers import turn
from threadline.backends.registry import DEFAULT_STORE_URL
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.database_url import database_url
from threadline.errors import ConfigError


async def test_plain_and_aiosqlite_urls_open_the_same_file(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'bot.db'}") as store:
        await store.append(turn("written through the plain URL"))
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        [stored] = await store.get("c1")
    assert stored.content == "written through the plain URL"
    assert DEFAULT_STORE_URL == "sqlite:///threadline.db"


@pytest.mark.parametrize("url", ["mysql://db/x", "not a url", "sqlite:///:memory:"])
def test_a_bad_database_url_is_a_usage_error(url: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError):
        SqlConversationStore(url)
    outcome = run_cli(capsys, "history", "list", "--url", url)
    assert outcome.code == 2
    assert outcome.err.startswith("threadline: error: ")
    assert "sqlite:///" in outcome.err  # says what to write instead


def test_postgresql_urls_settle_on_asyncpg() -> None:
    assert database_url("postgresql://u@h/db").drivername == "postgresql+asyncpg"
    assert database_url("sqlite+aiosqlite:///x.db").drivername == "sqlite"
