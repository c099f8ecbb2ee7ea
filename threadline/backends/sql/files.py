"""The SQL file store: the only code that knows the table `threadline_files`.

One row per distinct file (its sha256 is the key), so a picture sent ten times is kept once. The
bytes of a file up to `inline_max_bytes` are in the row; a larger file is written to
`directory` (named by its hash, written whole before the row exists, so a crash leaves at most
an unreferenced file, never a row without bytes); the row keeps the file's full path, so
reading or forgetting it needs only the database. Forgetting a file (`forget_unused`: what
`people forget`, `/forget-me` and retention call with the files of the turns they delete)
deletes both, once no stored turn names it any more.

The store runs its statements through the conversation store's `run` (its connections and
threads). The rest of the app sees it as the backend part `files`
(`threadline.history.file_store.FileStore`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import structlog

from threadline.errors import ConfigError
from threadline.history.file_store import DEFAULT_INLINE_MAX_BYTES

log = structlog.get_logger("threadline.files")

_INSERT = ("INSERT INTO threadline_files (sha256, media_type, size, data, path) "
           "VALUES (:sha, :media_type, :size, :data, :path) ON CONFLICT (sha256) DO NOTHING")
_READ = "SELECT data, path FROM threadline_files WHERE sha256 = :sha"
_USED = "SELECT 1 FROM threadline_messages WHERE extra_json LIKE :pattern LIMIT 1"
_PATH = "SELECT path FROM threadline_files WHERE sha256 = :sha"
_DELETE = "DELETE FROM threadline_files WHERE sha256 = :sha"
_DESCRIBE = "UPDATE threadline_files SET description = :text WHERE sha256 = :sha"
_DESCRIPTION = "SELECT sha256, description FROM threadline_files WHERE sha256 IN ({keys})"


class Runner(Protocol):
    def rows(self, sql: str, params: dict[str, Any]) -> list[Any]: ...
    def rowcount(self, sql: str, params: dict[str, Any]) -> int: ...


class RunsStatements(Protocol):
    """The conversation store's `run`: a function on a runner, in one transaction."""

    async def run(self, action: str, fn: Any, *args: Any, write: bool = False) -> Any: ...


class SqlFileStore:
    """Keeps and hands back file bytes by hash (see the module docstring)."""

    def __init__(self, store: RunsStatements, *, directory: str | Path | None = None,
                 inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES) -> None:
        if not callable(getattr(store, "run", None)):
            raise ConfigError(
                f"files need a SQL conversation store (SQLite or PostgreSQL); "
                f"{type(store).__name__} keeps no files. Set store.url in the config.")
        self.store = store
        self.directory = Path(directory) if directory else None
        self.inline_max_bytes = inline_max_bytes

    async def put(self, data: bytes, *, sha256: str, media_type: str) -> None:
        """Keep `data` under its hash (nothing happens when it is kept already)."""
        path: str | None = None
        blob: bytes | None = data
        if len(data) > self.inline_max_bytes:
            if self.directory is None:
                raise ConfigError(
                    f"a {len(data):,}-byte file is over files.inline_max_bytes "
                    f"({self.inline_max_bytes:,}) and no files.directory is set; set one")
            path = str(await asyncio.to_thread(self._write, sha256, data))
            blob = None
        await self.store.run("keep a file", _insert, {
            "sha": sha256, "media_type": media_type, "size": len(data), "data": blob,
            "path": path}, write=True)

    def _write(self, sha256: str, data: bytes) -> Path:
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        final = (self.directory / sha256).resolve()
        if final.exists():
            return final
        partial = final.with_suffix(".part")
        with open(partial, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        partial.replace(final)
        return final

    async def get(self, sha256: str) -> bytes | None:
        """The bytes kept under `sha256`, or None when they are not (forgotten, never kept)."""
        rows = await self.store.run("read a file", _rows, _READ, {"sha": sha256})
        if not rows:
            return None
        data, path = rows[0]
        if data is not None:
            return bytes(data)
        return None if path is None else await asyncio.to_thread(_read, Path(path))

    async def describe(self, sha256: str, text: str) -> None:
        """Keep the short description a model wrote of an image (written once, reused)."""
        await self.store.run("describe a file", _rowcount, _DESCRIBE,
                             {"sha": sha256, "text": text}, write=True)

    async def descriptions(self, sha256s: Iterable[str]) -> dict[str, str]:
        """The descriptions kept for these files (files without one are left out)."""
        keys = sorted(set(sha256s))
        if not keys:
            return {}
        params = {f"k{i}": key for i, key in enumerate(keys)}
        sql = _DESCRIPTION.format(keys=", ".join(f":{k}" for k in params))
        rows = await self.store.run("read file descriptions", _rows, sql, params)
        return {sha: text for sha, text in rows if text}

    def limited(self, *, directory: str | Path | None,
                inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES) -> SqlFileStore:
        """The same table, with the config's directory and inline size."""
        return SqlFileStore(self.store, directory=directory, inline_max_bytes=inline_max_bytes)

    async def forget_unused(self, sha256s: Iterable[str]) -> int:
        """Delete the bytes (row and file on disk) of these files that no stored turn names
        any more; how many were deleted."""
        deleted = 0
        for sha in sorted(set(sha256s)):
            path = await self.store.run("forget a file", _forget, sha, write=True)
            if path is False:
                continue
            deleted += 1
            if path:
                await asyncio.to_thread(Path(path).unlink, missing_ok=True)
        if deleted:
            log.info("files.forgotten", files=deleted)
        return deleted


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None when it is gone (deleted by hand: the turn says so)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _insert(runner: Runner, params: dict[str, Any]) -> None:
    runner.rowcount(_INSERT, params)


def _rows(runner: Runner, sql: str, params: dict[str, Any]) -> list[Any]:
    return [tuple(row) for row in runner.rows(sql, params)]


def _rowcount(runner: Runner, sql: str, params: dict[str, Any]) -> int:
    return runner.rowcount(sql, params)


def _forget(runner: Runner, sha: str) -> str | bool | None:
    """The deleted row's path (None: bytes were inline); False when kept (still used, or none)."""
    if runner.rows(_USED, {"pattern": f'%"sha256": "{sha}"%'}):
        return False
    rows = runner.rows(_PATH, {"sha": sha})
    if not rows:
        return False
    runner.rowcount(_DELETE, {"sha": sha})
    path: str | None = rows[0][0]
    return path
