"""The `http` platform's outbox in the history's database (migration `http_replies`).

A claim is one guarded update (`due_us` not yet in the future), so two replicas posting the
same channel's replies never both post one: SQLite runs writers one at a time; PostgreSQL skips
the rows another claimer holds (`FOR UPDATE SKIP LOCKED`), so two claimers take different
replies rather than racing for the same ones. A reply is kept with `ON CONFLICT DO
NOTHING` on its id: a turn answered again after a crash keeps it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple
from typing import Any

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore
from threadline.channels.http.outbox import HttpReply

_COLUMNS = ("reply_id", "channel", "conversation_id", "in_reply_to", "turn_id", "agent",
            "text", "created_us", "seq", "attempts", "delivered_us")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM threadline_http_replies"
_INSERT = ("INSERT INTO threadline_http_replies (reply_id, channel, conversation_id, "
           "in_reply_to, turn_id, agent, text, created_us, due_us, attempts) VALUES (:reply_id, "
           ":channel, :conversation_id, :in_reply_to, :turn_id, :agent, :text, :created_us, 0, 0) "
           "ON CONFLICT (reply_id) DO NOTHING")


def _reply(row: Sequence[Any]) -> HttpReply:
    return HttpReply(*row)


def _keep(conn: SqlRunner, reply: HttpReply) -> HttpReply:
    values = dict(zip(_COLUMNS, astuple(reply), strict=True))
    conn.rowcount(_INSERT, values)
    return _reply(conn.rows(f"{_SELECT} WHERE reply_id = :reply_id", values)[0])


def _claim_due(conn: SqlRunner, channel: str, now_us: int, lease_us: int,
               limit: int) -> list[HttpReply]:
    key = {"channel": channel, "now": now_us, "until": now_us + lease_us, "limit": limit}
    # PostgreSQL: rows another claimer is taking are skipped, not waited for and then lost.
    skip = " FOR UPDATE SKIP LOCKED" if conn.dialect == "postgresql" else ""
    due = conn.rows(f"{_SELECT} WHERE channel = :channel AND delivered_us IS NULL "
                    f"AND due_us <= :now ORDER BY seq LIMIT :limit{skip}", key)
    return [_reply(row) for row in due if conn.rowcount(
        "UPDATE threadline_http_replies SET due_us = :until WHERE reply_id = :id "
        "AND delivered_us IS NULL AND due_us <= :now", {**key, "id": row[0]}) == 1]


def _delivered(conn: SqlRunner, reply_id: str, now_us: int) -> None:
    conn.rowcount("UPDATE threadline_http_replies SET delivered_us = :now, error = NULL "
                  "WHERE reply_id = :id", {"id": reply_id, "now": now_us})


def _failed(conn: SqlRunner, reply_id: str, retry_at_us: int, error: str) -> None:
    conn.rowcount("UPDATE threadline_http_replies SET attempts = attempts + 1, due_us = :due, "
                  "error = :error WHERE reply_id = :id AND delivered_us IS NULL",
                  {"id": reply_id, "due": retry_at_us, "error": error[:2000]})


def _after(conn: SqlRunner, channel: str, cursor: int, limit: int,
           conversation_id: str | None) -> list[HttpReply]:
    only = " AND conversation_id = :cid" if conversation_id is not None else ""
    rows = conn.rows(f"{_SELECT} WHERE channel = :channel AND seq > :cursor{only} "
                     "ORDER BY seq LIMIT :limit",
                     {"channel": channel, "cursor": cursor, "limit": limit,
                      "cid": conversation_id})
    return [_reply(row) for row in rows]


def _undelivered(conn: SqlRunner, channel: str) -> int:
    return int(conn.rows("SELECT COUNT(*) FROM threadline_http_replies WHERE channel = :channel "
                         "AND delivered_us IS NULL", {"channel": channel})[0][0])


def _prune(conn: SqlRunner, channel: str, before_us: int, delivered_only: bool) -> int:
    only = " AND delivered_us IS NOT NULL" if delivered_only else ""
    return conn.rowcount("DELETE FROM threadline_http_replies WHERE channel = :channel "
                         f"AND created_us < :before{only}",
                         {"channel": channel, "before": before_us})


class SqlReplyOutbox:
    """`threadline.channels.http.outbox.ReplyOutbox` on the history's database."""

    def __init__(self, store: SqlConversationStore) -> None:
        self._store = store

    async def keep(self, reply: HttpReply) -> HttpReply:
        return await self._store.run("keep an http reply", _keep, reply, write=True)

    async def claim_due(self, channel: str, *, now_us: int, lease_us: int,
                        limit: int) -> list[HttpReply]:
        return await self._store.run("claim http replies to post", _claim_due, channel, now_us,
                                     lease_us, limit, write=True)

    async def delivered(self, reply_id: str, *, now_us: int) -> None:
        await self._store.run("mark an http reply delivered", _delivered, reply_id, now_us,
                              write=True)

    async def failed(self, reply_id: str, *, retry_at_us: int, error: str) -> None:
        await self._store.run("count a failed http reply", _failed, reply_id, retry_at_us,
                              error, write=True)

    async def after(self, channel: str, *, cursor: int, limit: int,
                    conversation_id: str | None = None) -> list[HttpReply]:
        return await self._store.run("read http replies", _after, channel, cursor, limit,
                                     conversation_id)

    async def undelivered(self, channel: str) -> int:
        return await self._store.run("count waiting http replies", _undelivered, channel)

    async def prune(self, channel: str, *, before_us: int, delivered_only: bool) -> int:
        return await self._store.run("delete old http replies", _prune, channel, before_us,
                                     delivered_only, write=True)
