"""Reply records in the history's database: the `threadline_reply_records` table (migration 0004),
written through the SQL store's own threads and connections, on SQLite and PostgreSQL alike.
A platform's delivery statuses are kept in its `delivery_status_json` (migration 0020)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from threadline.backends.sql.operations import (
    FEW_TURNS_WRITTEN,
    SqlRunner,
    durable_later,
    one_write,
)
from threadline.backends.sql.schema import from_micros, to_micros
from threadline.backends.sql.store import SqlConversationStore
from threadline.channels.delivery_status import PartStatus, advanced
from threadline.inspector.record import ReplyRecord
from threadline.inspector.records import MIN_PREFIX, Recordable, RecordedConversation

_COLUMNS = (
    "id", "conversation_id", "agent", "inbound_id", "outbound_id", "created_us",
    "addressed_because", "model", "stop_reason", "latency_ms", "model_calls", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "prompt_tokens",
    "token_budget", "reply", "error", "trace_id",
)
_LIST = ", ".join(_COLUMNS)
_READ = f"{_LIST}, delivery_status_json"  # what every read returns; detail only when asked
_INSERT = (f"INSERT INTO threadline_reply_records ({_LIST}, detail_json, delivery_status_json) "
           f"VALUES ({', '.join(':' + c for c in _COLUMNS)}, :detail_json, :statuses) "
           "ON CONFLICT DO NOTHING")


def _row(record: ReplyRecord) -> dict[str, Any]:
    values = {c: getattr(record, c) for c in _COLUMNS if c != "created_us"}
    values["created_us"] = to_micros(record.created_at)
    values["detail_json"] = json.dumps(record.detail or {}, ensure_ascii=False,
                                       sort_keys=True, default=str)
    # Statuses a platform sent before the record was written (`ReplyRecorder.hold_status`).
    values["statuses"] = (json.dumps(dict(record.delivery_status), sort_keys=True)
                          if record.delivery_status else None)
    return values


def _record(row: Sequence[Any], detail_json: str | None = None) -> ReplyRecord:
    values = dict(zip((*_COLUMNS, "delivery_status_json"), row, strict=True))
    values["created_at"] = from_micros(values.pop("created_us"))
    values["latency_ms"] = float(values["latency_ms"])
    statuses = values.pop("delivery_status_json")
    return ReplyRecord(**values, detail=json.loads(detail_json) if detail_json else None,
                       delivery_status=json.loads(statuses) if statuses else None)


def _rows(pending: Sequence[Recordable]) -> list[dict[str, Any]]:
    return [_row(p.to_record()) for p in pending]


@durable_later  # diagnostics, which a crash may lose (`threadline.inspector`)
def _insert(conn: SqlRunner, rows: Sequence[dict[str, Any]]) -> int:
    return sum(conn.rowcount(_INSERT, row) for row in rows)


@durable_later
@one_write
def _insert_one(conn: SqlRunner, rows: Sequence[dict[str, Any]]) -> int:
    """`_insert` of one record (a quiet bot's every batch): one statement, which PostgreSQL
    runs without BEGIN and COMMIT, two round trips fewer on the connections turns use."""
    return _insert(conn, rows)


def _select_recent(conn: SqlRunner, conversation_id: str | None, agent: str | None,
                   since: datetime | None, limit: int) -> list[ReplyRecord]:
    where = ["1 = 1"]
    params: dict[str, Any] = {"limit": limit}
    if conversation_id is not None:
        where.append("conversation_id = :cid")
        params["cid"] = conversation_id
    if agent is not None:
        where.append("agent = :agent")
        params["agent"] = agent
    if since is not None:
        where.append("created_us >= :since")
        params["since"] = to_micros(since)
    rows = conn.rows(f"SELECT {_READ} FROM threadline_reply_records WHERE "
                     f"{' AND '.join(where)} ORDER BY created_us DESC LIMIT :limit", params)
    return [_record(row) for row in rows]


def _select_one(conn: SqlRunner, record_id: str) -> ReplyRecord | None:
    rows = conn.rows(f"SELECT {_READ}, detail_json FROM threadline_reply_records "
                     "WHERE id = :id", {"id": record_id})
    if not rows and len(record_id) >= MIN_PREFIX:
        escaped = _escaped(record_id)
        rows = conn.rows(f"SELECT {_READ}, detail_json FROM threadline_reply_records "
                         "WHERE id LIKE :prefix ESCAPE '\\' LIMIT 2",
                         {"prefix": escaped + "%"})
    if len(rows) != 1:
        return None
    return _record(rows[0][:-1], rows[0][-1])


def _select_conversations(conn: SqlRunner, limit: int) -> list[RecordedConversation]:
    rows = conn.rows("SELECT conversation_id, count(*), max(created_us) FROM "
                     "threadline_reply_records GROUP BY conversation_id "
                     "ORDER BY max(created_us) DESC LIMIT :limit", {"limit": limit})
    return [RecordedConversation(r[0], int(r[1]), from_micros(int(r[2]))) for r in rows]


def _escaped(text: str) -> str:
    """`text` for a LIKE pattern, its wildcards taken literally (ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _note_delivery(conn: SqlRunner, conversation_id: str, platform_id: str,
                   status: PartStatus) -> bool:
    # The conversation's newest record naming the id among its delivered ids: the record
    # index (conversation, time) finds the recent reply a status is about in a few rows.
    # FOR UPDATE: two replicas taking two statuses of one reply keep both.
    lock = " FOR UPDATE" if conn.dialect == "postgresql" else ""
    quoted = json.dumps(platform_id, ensure_ascii=False)
    rows = conn.rows(
        "SELECT id, delivery_status_json FROM threadline_reply_records "
        "WHERE conversation_id = :cid AND detail_json LIKE :pattern ESCAPE '\\' "
        f"ORDER BY created_us DESC LIMIT 1{lock}",
        {"cid": conversation_id, "pattern": f"%{_escaped(quoted)}%"})
    if not rows:
        return False
    record_id, known = rows[0]
    statuses = advanced(json.loads(known) if known else None, platform_id, status)
    if statuses is None:
        return False
    return conn.rowcount(
        "UPDATE threadline_reply_records SET delivery_status_json = :statuses WHERE id = :id",
        {"id": record_id, "statuses": json.dumps(statuses, sort_keys=True)}) == 1


def _delete_before(conn: SqlRunner, cutoff_us: int) -> int:
    return conn.rowcount("DELETE FROM threadline_reply_records WHERE created_us < :cutoff",
                         {"cutoff": cutoff_us})


class SqlReplyRecords:
    """Records in the conversation store's database; see the module docstring."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def add(self, pending: Sequence[Recordable]) -> int:
        if not pending:
            return 0
        # Built (rendered, counted, redacted, encoded) outside the write transaction: a few
        # at once, more in a worker thread. Building is Python holding the GIL, so a thread
        # spares the loop nothing for a record or two; it cost the hop, and the loop waited
        # for the GIL at each of its calls into sqlite3 meanwhile.
        few = len(pending) <= FEW_TURNS_WRITTEN
        rows = _rows(pending) if few else await asyncio.to_thread(_rows, list(pending))
        return await self.store.run("record replies", _insert_one if len(rows) == 1
                                    else _insert, rows, write=True, few=few)

    async def recent(self, conversation_id: str | None = None, *, agent: str | None = None,
                     since: datetime | None = None, limit: int = 50) -> list[ReplyRecord]:
        return await self.store.run("read reply records", partial(
            _select_recent, conversation_id=conversation_id, agent=agent, since=since,
            limit=limit))

    async def get(self, record_id: str) -> ReplyRecord | None:
        return await self.store.run("read a reply record", _select_one, record_id)

    async def conversations(self, *, limit: int = 100) -> list[RecordedConversation]:
        return await self.store.run("list recorded conversations", _select_conversations,
                                    limit)

    async def note_delivery(self, conversation_id: str, platform_id: str,
                            status: PartStatus) -> bool:
        return await self.store.run("record a delivery status", _note_delivery,
                                    conversation_id, platform_id, status, write=True)

    async def prune(self, before: datetime) -> int:
        return await self.store.run("prune reply records", _delete_before, to_micros(before),
                                    write=True)
