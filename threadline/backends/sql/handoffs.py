"""Handoffs in the history's database (`threadline.handoff.book` says what a handoff is)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore
from threadline.handoff.book import Handoff

_COLUMNS = "conversation_id, customer_id, customer_name, reason, started_us, until_us"


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _at(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, UTC)


def _from_row(row: Sequence[Any]) -> Handoff:
    return Handoff(conversation_id=row[0], customer_id=row[1], customer_name=row[2],
                   reason=row[3], started_at=_at(row[4]), until=_at(row[5]))


def _start(conn: SqlRunner, handoff: Handoff) -> bool:
    """Hand the conversation over; False when it already was (the pause is moved on)."""
    active = _current(conn, handoff.conversation_id, handoff.started_at)
    conn.rowcount(
        f"INSERT INTO threadline_handoffs ({_COLUMNS}, ended_us) VALUES (:cid, :customer, "
        ":name, :reason, :started, :until, NULL) ON CONFLICT (conversation_id) DO UPDATE SET "
        "customer_id = excluded.customer_id, customer_name = excluded.customer_name, "
        "reason = excluded.reason, started_us = excluded.started_us, "
        "until_us = excluded.until_us, ended_us = NULL",
        {"cid": handoff.conversation_id, "customer": handoff.customer_id,
         "name": handoff.customer_name, "reason": handoff.reason,
         "started": _us(active.started_at if active else handoff.started_at),
         "until": _us(handoff.until)})
    return active is None


def _current(conn: SqlRunner, conversation_id: str, now: datetime) -> Handoff | None:
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_handoffs WHERE conversation_id = :cid "
                     "AND ended_us IS NULL AND until_us > :now",
                     {"cid": conversation_id, "now": _us(now)})
    return _from_row(rows[0]) if rows else None


def _renew(conn: SqlRunner, conversation_id: str, until: datetime) -> None:
    conn.rowcount("UPDATE threadline_handoffs SET until_us = :until WHERE conversation_id = "
                  ":cid AND ended_us IS NULL AND until_us < :until",
                  {"cid": conversation_id, "until": _us(until)})


def _end(conn: SqlRunner, conversation_id: str, now: datetime) -> bool:
    return conn.rowcount(
        "UPDATE threadline_handoffs SET ended_us = :now WHERE conversation_id = :cid AND "
        "ended_us IS NULL AND until_us > :now", {"cid": conversation_id, "now": _us(now)}) == 1


class SqlHandoffBook:
    """Handoffs in a `SqlConversationStore`'s database; see the module docstring."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def start(self, handoff: Handoff) -> bool:
        """Hand a conversation to people; False when it already was (its pause moves on)."""
        new: bool = await self.store.run("hand a conversation to people", _start, handoff,
                                         write=True)
        return new

    async def current(self, conversation_id: str, now: datetime) -> Handoff | None:
        """The conversation's handoff, if it is handed to people at `now`."""
        found: Handoff | None = await self.store.run("read a handoff", _current,
                                                     conversation_id, now, few=True)
        return found

    async def renew(self, conversation_id: str, until: datetime) -> None:
        """Keep the bot quiet until at least `until` (a human answered)."""
        await self.store.run("renew a handoff", _renew, conversation_id, until, write=True)

    async def end(self, conversation_id: str, now: datetime) -> bool:
        """Give the conversation back to the bot; False when it was not handed over."""
        ended: bool = await self.store.run("end a handoff", _end, conversation_id, now,
                                           write=True)
        return ended
