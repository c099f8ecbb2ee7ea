"""Per-conversation serialization: one owner of a conversation at a time.

`LocalConversationLock` orders work inside one process (asyncio locks are FIFO, so waiters go
in arrival order). Across processes the turn pipeline asks a `ConversationLock` to *try* to own
a conversation: `SingleProcessLock` always succeeds (SQLite and in-memory stores serve one
process); a backend shared by several processes gives its own as its `lock` part (the SQL
backend's `PostgresConversationLock` in `threadline.backends.sql.locks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Protocol, TextIO

from threadline.errors import ConfigError

# Seconds before a process looks again at a conversation another process owned (that process
# may have let go just before the turn was recorded); a lock holding conversations past their
# turns lets go sooner than this.
SECOND_LOOK = 0.2


class ConversationLock(Protocol):
    """Owns a conversation across processes while its turns are answered."""

    @property
    def concurrency(self) -> int:
        """How many conversations one process may hold at once."""
        ...

    def try_hold(self, conversation_id: str) -> AbstractAsyncContextManager[bool]:
        """Own the conversation inside the block if the value is True; never waits for it."""
        ...

    async def close(self) -> None: ...


class SingleProcessLock:
    """For stores one process serves: the conversation is always ours."""

    concurrency = 64

    @asynccontextmanager
    async def try_hold(self, conversation_id: str) -> AsyncIterator[bool]:
        yield True

    async def close(self) -> None:
        """Nothing to release."""


class LocalConversationLock:
    """In-process: one asyncio lock per conversation, forgotten when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, conversation_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(conversation_id, (asyncio.Lock(), 0))
        self._locks[conversation_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[conversation_id]
            if users == 1:
                del self._locks[conversation_id]
            else:
                self._locks[conversation_id] = (lock, users - 1)


class SingleProcessGuard:
    """Refuses a second process on a store only one process may serve (a SQLite file).

    An exclusive `flock` on a file beside the database, released by the kernel when the process
    dies, so a crash never leaves it stale; a clean stop removes the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: TextIO | None = None

    def acquire(self) -> None:
        file = try_lock_file(self.path)
        if file is None:
            holder = ""
            with contextlib.suppress(OSError):
                holder = self.path.read_text(encoding="utf-8").strip()
            raise ConfigError(
                f"another threadline process (pid {holder or 'unknown'}) is already serving "
                f"this SQLite database ({self.path.with_suffix('')}); SQLite serves one "
                "process. Stop it, or move the store to PostgreSQL to run several processes"
            )
        file.seek(0)
        file.truncate()
        file.write(str(os.getpid()))
        file.flush()
        self._file = file

    def release(self) -> None:
        if self._file is not None:
            unlock_file(self._file, self.path)
            self._file = None


def lock_file(path: Path) -> TextIO:
    """`path` opened (created if need be) and exclusively `flock`ed, waiting for another
    holder; release it with `unlock_file`, which removes the file."""
    file = _locked(path, fcntl.LOCK_EX)
    assert file is not None  # a blocking flock returns only once it is held
    return file


def try_lock_file(path: Path) -> TextIO | None:
    """Like `lock_file`, but None at once if another process holds it."""
    return _locked(path, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _locked(path: Path, operation: int) -> TextIO | None:
    while True:
        file = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - the caller holds it open
        try:
            fcntl.flock(file, operation)
        except BlockingIOError:
            file.close()
            return None
        if _still_at(file, path):
            return file
        # Its last holder removed it between our open and our lock: lock the one there now.
        file.close()


def unlock_file(file: TextIO, path: Path) -> None:
    """Remove a file `lock_file` locked, then release it (a process waiting on the removed
    file sees it gone and locks the new one, so no lock file is left behind)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fcntl.flock(file, fcntl.LOCK_UN)
    file.close()


def _still_at(file: TextIO, path: Path) -> bool:
    try:
        there = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(file.fileno())
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)
