"""Votes on replies in the history's database (`threadline.feedback.votes` says what one is).

`threadline_reply_feedback` (migration 0016): one row per reply and voter, so a second press
is one upsert that replaces the first. Read per reply, per voter (export, forget) and by the
time of voting (the console's satisfaction over time).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.schema import from_micros, to_micros
from threadline.backends.sql.store import SqlConversationStore
from threadline.feedback.votes import DailyFeedback, Vote, VoteValue, counted_daily

_COLUMNS = "reply_id, conversation_id, agent, voter, vote, reason, voted_us"
_SELECT = f"SELECT {_COLUMNS} FROM threadline_reply_feedback"


def _row(row: Sequence[Any]) -> Vote:
    return Vote(reply_id=row[0], conversation_id=row[1], agent=row[2], voter=row[3],
                vote=cast(VoteValue, row[4]), reason=row[5], voted_at=from_micros(int(row[6])))


def _cast(conn: SqlRunner, vote: Vote) -> VoteValue | None:
    earlier = conn.rows("SELECT vote FROM threadline_reply_feedback WHERE reply_id = :reply "
                        "AND voter = :voter", {"reply": vote.reply_id, "voter": vote.voter})
    conn.rowcount(
        f"INSERT INTO threadline_reply_feedback ({_COLUMNS}) VALUES (:reply, :cid, :agent, "
        ":voter, :vote, :reason, :at) ON CONFLICT (reply_id, voter) DO UPDATE SET "
        "reason = CASE WHEN excluded.reason IS NULL AND threadline_reply_feedback.vote = "
        "excluded.vote THEN threadline_reply_feedback.reason ELSE excluded.reason END, "
        "vote = excluded.vote, voted_us = excluded.voted_us",
        {"reply": vote.reply_id, "cid": vote.conversation_id, "agent": vote.agent,
         "voter": vote.voter, "vote": vote.vote, "reason": vote.reason,
         "at": to_micros(vote.voted_at)})
    return cast(VoteValue, earlier[0][0]) if earlier else None


def _on_reply(conn: SqlRunner, reply_id: str) -> list[Vote]:
    return [_row(r) for r in conn.rows(f"{_SELECT} WHERE reply_id = :reply ORDER BY voted_us",
                                       {"reply": reply_id})]


def _recent(conn: SqlRunner, agent: str | None, vote: str | None, limit: int) -> list[Vote]:
    given = {"agent": agent, "vote": vote}
    where = " AND ".join(f"{column} = :{column}" for column, v in given.items() if v is not None)
    rows = conn.rows(f"{_SELECT}{' WHERE ' + where if where else ''} ORDER BY voted_us DESC "
                     "LIMIT :limit",
                     {**{c: v for c, v in given.items() if v is not None}, "limit": limit})
    return [_row(r) for r in rows]


def _since(conn: SqlRunner, since_us: int) -> list[Vote]:
    return [_row(r) for r in conn.rows(f"{_SELECT} WHERE voted_us >= :since",
                                       {"since": since_us})]


def _by_voters(conn: SqlRunner, voters: list[str]) -> list[Vote]:
    if not voters:
        return []
    names = {f"v{i}": v for i, v in enumerate(voters)}
    marks = ", ".join(f":{n}" for n in names)
    return [_row(r) for r in conn.rows(f"{_SELECT} WHERE voter IN ({marks}) ORDER BY voted_us",
                                       names)]


def _forget_voters(conn: SqlRunner, voters: list[str]) -> int:
    if not voters:
        return 0
    names = {f"v{i}": v for i, v in enumerate(voters)}
    marks = ", ".join(f":{n}" for n in names)
    return conn.rowcount(f"DELETE FROM threadline_reply_feedback WHERE voter IN ({marks})", names)


class SqlFeedbackBook:
    """The votes table, over the store's own connection (one small typed part)."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def cast(self, vote: Vote) -> VoteValue | None:
        return await self.store.run("keep a vote on a reply", _cast, vote, write=True)

    async def on_reply(self, reply_id: str) -> list[Vote]:
        return await self.store.run("read the votes on a reply", _on_reply, reply_id)

    async def recent(self, *, agent: str | None = None, vote: VoteValue | None = None,
                     limit: int = 50) -> list[Vote]:
        return await self.store.run("list votes on replies", _recent, agent, vote, limit)

    async def daily(self, *, since: datetime) -> list[DailyFeedback]:
        votes = await self.store.run("count votes on replies", _since, to_micros(since))
        return counted_daily(votes)

    async def by_voters(self, voters: Iterable[str]) -> list[Vote]:
        return await self.store.run("read a person's votes", _by_voters, list(voters))

    async def forget_voters(self, voters: Iterable[str]) -> int:
        return await self.store.run("forget a person's votes", _forget_voters, list(voters),
                                    write=True)
