"""Tool approvals in the history's database (`threadline.agents.approvals` says what one is).

`threadline_tool_approvals` (migration 0009): each state change is one guarded update, so a
call moves from approved to running once, whichever process or attempt gets there first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from threadline.agents.approvals import Approval
from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore

_COLUMNS = ("approval_id, conversation_id, turn_id, agent, tool, input_json, approvers_json, "
            "state, decided_by, result, is_error, posted, created_us, expires_us")


def _row(row: Sequence[Any]) -> Approval:
    return Approval(id=row[0], conversation_id=row[1], turn_id=row[2], agent=row[3],
                    tool=row[4], input=json.loads(row[5]), approvers=tuple(json.loads(row[6])),
                    state=row[7], decided_by=row[8], result=row[9], is_error=bool(row[10]),
                    posted=bool(row[11]), created_us=int(row[12]), expires_us=int(row[13]))


def _open(conn: SqlRunner, approval: Approval) -> Approval:
    conn.rowcount(
        f"INSERT INTO threadline_tool_approvals ({_COLUMNS}) VALUES (:id, :cid, :turn, :agent, "
        ":tool, :input, :approvers, 'pending', NULL, NULL, :f, :f, :created, :expires) "
        "ON CONFLICT DO NOTHING",
        {"id": approval.id, "cid": approval.conversation_id, "turn": approval.turn_id,
         "agent": approval.agent, "tool": approval.tool,
         "input": json.dumps(dict(approval.input), sort_keys=True, ensure_ascii=False),
         "approvers": json.dumps(list(approval.approvers)), "f": False,
         "created": approval.created_us, "expires": approval.expires_us})
    found = _get(conn, approval.id)
    assert found is not None
    return found


def _get(conn: SqlRunner, id: str) -> Approval | None:
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_tool_approvals "
                     "WHERE approval_id = :id", {"id": id})
    return _row(rows[0]) if rows else None


def _move(conn: SqlRunner, id: str, before: str, after: str, extra: Mapping[str, Any]) -> bool:
    sets = "".join(f", {column} = :{column}" for column in extra)
    return conn.rowcount(f"UPDATE threadline_tool_approvals SET state = :after{sets} "
                         "WHERE approval_id = :id AND state = :before",
                         {"id": id, "before": before, "after": after, **extra}) == 1


def _mark_posted(conn: SqlRunner, id: str) -> None:
    conn.rowcount("UPDATE threadline_tool_approvals SET posted = :t WHERE approval_id = :id",
                  {"id": id, "t": True})


class SqlApprovalBook:
    """The approvals table, over the store's own connection (one small typed part)."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def open(self, approval: Approval) -> Approval:
        """The row for this call: created pending, or as an earlier attempt left it."""
        return await self.store.run("open a tool approval", _open, approval, write=True)

    async def get(self, id: str) -> Approval | None:
        return await self.store.run("read a tool approval", _get, id)

    async def move(self, id: str, before: str, after: str, **extra: Any) -> bool:
        """`before` -> `after` if nobody moved it first; True when this call moved it."""
        return await self.store.run("decide a tool approval", _move, id, before, after, extra,
                                    write=True)

    async def mark_posted(self, id: str) -> None:
        await self.store.run("mark an approval shown", _mark_posted, id, write=True)
