"""Change notifications of the SQL history across processes: PostgreSQL's LISTEN/NOTIFY.

Each committed append, edit or delete sends `pg_notify` inside its own transaction, so a
notification is delivered only once the change is committed, to every process listening on the
database (this one included). A process listens on one dedicated asyncpg connection
(`add_listener`). SQLite has no such thing: its store notifies within its own process only.
The channel name carries the schema, so deployments sharing a database in different schemas do
not hear each other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
import structlog
from sqlalchemy.engine import URL

from threadline.backends.sql.operations import SqlRunner
from threadline.history.changes import HistoryChange

log = structlog.get_logger("threadline.store")
# NOTIFY payloads must stay under 8,000 bytes: a longer list of ids is cut (the change and its
# conversation are still announced; a listener reads the conversation to see the rest).
_MAX_PAYLOAD = 7000


def channel_for(url: URL) -> str:
    """The NOTIFY channel of a database URL (and of its schema)."""
    schema = str(url.query.get("search_path") or "")
    suffix = "_" + hashlib.sha256(schema.encode()).hexdigest()[:12] if schema else ""
    return f"threadline_history{suffix}"


def encode(change: HistoryChange) -> str:
    ids = list(change.message_ids)
    while True:
        payload = json.dumps({"k": change.kind, "c": change.conversation_id, "i": ids})
        if len(payload.encode()) <= _MAX_PAYLOAD or not ids:
            return payload
        ids = ids[: len(ids) // 2]


def decode(payload: str) -> HistoryChange:
    raw = json.loads(payload)
    return HistoryChange(raw["k"], raw["c"], tuple(raw["i"]))


def announce(conn: SqlRunner, channel: str, changes: Sequence[HistoryChange]) -> None:
    """Send the changes at commit of the caller's transaction (PostgreSQL only)."""
    if conn.dialect != "postgresql":
        return
    for change in changes:
        conn.rows("SELECT pg_notify(:channel, :payload)",
                  {"channel": channel, "payload": encode(change)})


class Listener:
    """One connection that hears the database's history changes and hands them on."""

    def __init__(self, url: URL, deliver: Callable[[Sequence[HistoryChange]], None], *,
                 timeout: float) -> None:
        self.channel = channel_for(url)
        self._dsn = url.set(drivername="postgresql", query={}).render_as_string(
            hide_password=False)
        self._deliver = deliver
        self._timeout = timeout
        self._connection: asyncpg.Connection | None = None

    async def start(self) -> None:
        self._connection = await asyncpg.connect(self._dsn, timeout=self._timeout)
        await self._connection.add_listener(self.channel, self._heard)

    def _heard(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        try:
            change = decode(payload)
        except (ValueError, KeyError, TypeError):
            log.warning("store.notification_unreadable", channel=channel)
            return
        self._deliver([change])

    async def close(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            await connection.close()
