"""Store URLs, read once: which database, and for SQLite which file.

    sqlite:///threadline.db                        the embedded default (a file)
    postgresql+asyncpg://USER@HOST/DB              several replicas (`postgresql://` too)

SQLite runs on the standard `sqlite3` driver in the store's own threads, so a SQLite URL names
no driver; `sqlite+aiosqlite:///PATH`, which older configs have, is accepted and means the same
file. Anything else is a `ConfigError` that says what to write instead.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import make_url
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError

from threadline.backends.registry import scheme_of
from threadline.errors import ConfigError

_EXPECTED = "sqlite:///PATH or postgresql+asyncpg://USER@HOST/DB"


def database_url(url: str) -> URL:
    """The parsed URL of a supported database, with its driver settled (sqlite3 or asyncpg)."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"store URL {url!r} is not a database URL; use {_EXPECTED}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite")
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+asyncpg")
    raise ConfigError(f"unsupported database {backend!r} in store URL "
                      f"{parsed.render_as_string(hide_password=True)!r}; use {_EXPECTED}")


def sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names (None for PostgreSQL and for in-memory databases)."""
    if isinstance(url, str) and scheme_of(url) != "sqlite":
        return None  # another backend's URL names no SQLite file
    parsed = database_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    path = database.removeprefix("file:") if parsed.query.get("uri") == "true" else database
    if path in ("", ":memory:") or parsed.query.get("mode") == "memory":
        return None
    return Path(path)
