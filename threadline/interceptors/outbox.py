"""The durable outbox: turns the store could not take yet, kept on disk until it can.

An append-only JSON Lines file (one turn per line, fsynced before `add` returns) next to the
embedded database (`threadline.db.outbox.jsonl`) or at a configured path. Entries leave the file
only after the store has them, by an atomic rewrite (temporary file, fsync, rename), so a crash
at any moment loses nothing: at worst a turn is replayed twice, and the store's duplicate
protection (`append` returns False) makes that harmless. A `flock` on a sibling `.lock` file
lets several processes share one outbox.

A line that cannot be read back (a torn write after a crash) is moved to `<path>.rejected`
with a log line, never silently dropped.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import structlog

from threadline.history.codec import message_from_dict, message_to_dict
from threadline.history.model import StoredMessage

log = structlog.get_logger("threadline.outbox")

FORMAT_VERSION = 1


def _encode(message: StoredMessage) -> str:
    entry = {"v": FORMAT_VERSION, "message": message_to_dict(message)}
    # default=repr keeps a turn whose metadata extra holds a non-JSON value: losing the turn
    # would be worse than storing that one value as its repr.
    return json.dumps(entry, ensure_ascii=False, sort_keys=True, default=repr)


class Outbox:
    """Turns waiting for the store, durable on disk, in the order they were added.

    The file calls are blocking but short (one write and fsync); the async wrappers run them in
    a thread so the event loop never waits on the disk.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self.rejected_path = self.path.with_name(self.path.name + ".rejected")

    def has_pending(self) -> bool:
        """Whether any turn waits, in this process or another (one stat call: the hot path)."""
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add_now(self, messages: Sequence[StoredMessage]) -> int:
        """Append turns durably (written and fsynced); returns the outbox depth afterwards."""
        lines = "".join(_encode(m) + "\n" for m in messages)
        with self._locked():
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(lines)
                file.flush()
                os.fsync(file.fileno())
            return len(self._read_lines())

    def pending_now(self) -> list[StoredMessage]:
        """Every waiting turn, oldest first; unreadable lines are set aside (see module doc)."""
        with self._locked():
            lines = self._read_lines()
            messages, bad = self._parse(lines)
            if bad:
                self._reject(bad)
                self._rewrite([line for line in lines if line not in bad])
        return messages

    def remove_now(self, ids: Sequence[str]) -> int:
        """Drop the entries of these turns (they are in the store now); returns the depth left."""
        wanted = set(ids)
        with self._locked():
            kept: list[str] = []
            for line in self._read_lines():
                try:
                    message_id = json.loads(line)["message"]["id"]
                except (ValueError, KeyError, TypeError):
                    message_id = None
                if message_id in wanted:
                    wanted.discard(message_id)  # only the first copy: a later one is a new add
                else:
                    kept.append(line)
            self._rewrite(kept)
            return len(kept)

    async def add(self, messages: Sequence[StoredMessage]) -> int:
        return await asyncio.to_thread(self.add_now, messages)

    async def pending(self) -> list[StoredMessage]:
        return await asyncio.to_thread(self.pending_now)

    async def remove(self, ids: Sequence[str]) -> int:
        return await asyncio.to_thread(self.remove_now, ids)

    def _read_lines(self) -> list[str]:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as file:
                return [line.rstrip("\n") for line in file if line.strip()]
        except FileNotFoundError:
            return []

    def _parse(self, lines: list[str]) -> tuple[list[StoredMessage], list[str]]:
        messages: list[StoredMessage] = []
        bad: list[str] = []
        for line in lines:
            try:
                messages.append(message_from_dict(json.loads(line)["message"]))
            except (ValueError, KeyError, TypeError) as exc:
                log.error("outbox.unreadable_entry", path=str(self.path), error=str(exc),
                          moved_to=str(self.rejected_path))
                bad.append(line)
        return messages, bad

    def _reject(self, lines: list[str]) -> None:
        with open(self.rejected_path, "a", encoding="utf-8") as file:
            file.write("".join(line + "\n" for line in lines))
            file.flush()
            os.fsync(file.fileno())

    def _rewrite(self, lines: list[str]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            file.write("".join(line + "\n" for line in lines))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
