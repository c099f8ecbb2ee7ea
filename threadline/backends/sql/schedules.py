"""The schedule book in the history's database (`threadline.schedules.book` says how a due
schedule is claimed once, as an ordinary turn in the inbox)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from croniter import croniter

from threadline.backends.sql.inbox import insert_new_turns
from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore
from threadline.schedules.book import Firing
from threadline.schedules.limits import ScheduleLimits
from threadline.schedules.schedule import Schedule, State
from threadline.schedules.timing import next_occurrence, zone
from threadline.schedules.turns import scheduled_turn

_COLUMNS = ("schedule_id, name, conversation_id, channel, agent, kind, text, due_us, cron, "
            "timezone, created_by, created_by_name, origin_json, state, fired, created_us")


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _at(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1_000_000, UTC)


def _from_row(row: Sequence[Any]) -> Schedule:
    return Schedule(id=row[0], name=row[1], conversation_id=row[2], channel=row[3],
                    agent=row[4], kind=row[5], text=row[6], due_at=_at(row[7]), cron=row[8],
                    timezone=row[9], created_by=row[10], created_by_name=row[11],
                    origin=json.loads(row[12]), state=row[13], fired=int(row[14]),
                    created_at=_at(row[15]) or datetime.now(UTC))


def _params(schedule: Schedule) -> dict[str, Any]:
    return {"id": schedule.id, "name": schedule.name, "cid": schedule.conversation_id,
            "channel": schedule.channel, "agent": schedule.agent, "kind": schedule.kind,
            "text": schedule.text,
            "due": None if schedule.due_at is None else _us(schedule.due_at),
            "cron": schedule.cron, "tz": schedule.timezone, "by": schedule.created_by,
            "by_name": schedule.created_by_name,
            "origin": json.dumps(dict(schedule.origin), sort_keys=True),
            "state": schedule.state, "fired": schedule.fired,
            "created": _us(schedule.created_at)}


_INSERT = (f"INSERT INTO threadline_schedules ({_COLUMNS}) VALUES (:id, :name, :cid, :channel, "
           ":agent, :kind, :text, :due, :cron, :tz, :by, :by_name, :origin, :state, :fired, "
           ":created)")


def _add(conn: SqlRunner, schedules: Sequence[Schedule]) -> None:
    for schedule in schedules:
        conn.rowcount(_INSERT, _params(schedule))


def _add_within(conn: SqlRunner, schedule: Schedule, limits: ScheduleLimits) -> None:
    """Add a person's schedule unless they, or its conversation, already have their cap (the
    count and the insert in one transaction)."""
    [(person, conversation)] = conn.rows(
        "SELECT SUM(CASE WHEN created_by = :by THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN conversation_id = :cid THEN 1 ELSE 0 END) FROM threadline_schedules "
        "WHERE state = 'active' AND name IS NULL AND (created_by = :by OR conversation_id = :cid)",
        {"by": schedule.created_by, "cid": schedule.conversation_id})
    limits.check_counts(person=int(person or 0), conversation=int(conversation or 0),
                        who=schedule.created_by_name or schedule.created_by)
    conn.rowcount(_INSERT, _params(schedule))


def _put_named(conn: SqlRunner, schedule: Schedule) -> bool:
    """A config schedule by name: added, or replaced when its definition changed (its next
    due time is kept when only the text changed); True when the book changed."""
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_schedules WHERE name = :name",
                     {"name": schedule.name})
    if rows:
        old = _from_row(rows[0])
        same_time = (old.cron, old.timezone) == (schedule.cron, schedule.timezone) and (
            schedule.cron is not None or old.due_at == schedule.due_at)
        if same_time and (old.conversation_id, old.channel, old.agent, old.kind, old.text) == (
                schedule.conversation_id, schedule.channel, schedule.agent, schedule.kind,
                schedule.text):
            return False
        keep = replace(schedule, id=old.id, fired=old.fired,
                       due_at=old.due_at if same_time and old.state == "active"
                       else schedule.due_at)
        conn.rowcount("DELETE FROM threadline_schedules WHERE schedule_id = :id", {"id": old.id})
        schedule = keep
    conn.rowcount(_INSERT, _params(schedule))
    return True


def _keep_configured(conn: SqlRunner, schedules: Sequence[Schedule]) -> None:
    for schedule in schedules:
        _put_named(conn, schedule)
    names = {s.name for s in schedules}
    for row in conn.rows("SELECT schedule_id, name FROM threadline_schedules WHERE name IS NOT "
                         "NULL AND state = 'active'", {}):
        if row[1] not in names:
            _cancel(conn, row[0])


def _list(conn: SqlRunner, conversation_id: str | None, states: Sequence[str],
          limit: int) -> list[Schedule]:
    where = "state IN (" + ", ".join(f":s{i}" for i in range(len(states))) + ")"
    params: dict[str, Any] = {f"s{i}": s for i, s in enumerate(states)}
    if conversation_id is not None:
        where += " AND conversation_id = :cid"
        params["cid"] = conversation_id
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_schedules WHERE {where} "
                     "ORDER BY due_us, schedule_id LIMIT :limit", {**params, "limit": limit})
    return [_from_row(row) for row in rows]


def _get(conn: SqlRunner, schedule_id: str) -> Schedule | None:
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_schedules WHERE schedule_id = :id",
                     {"id": schedule_id})
    return _from_row(rows[0]) if rows else None


def _cancel(conn: SqlRunner, schedule_id: str) -> bool:
    return conn.rowcount("UPDATE threadline_schedules SET state = 'cancelled', due_us = NULL "
                         "WHERE schedule_id = :id AND state = 'active'", {"id": schedule_id}) == 1


def _slot_and_next(schedule: Schedule, now: datetime) -> tuple[datetime, datetime | None]:
    """The slot to fire now (the latest one due) and the next due time (None: finished)."""
    due = schedule.due_at or now
    if schedule.cron is None:
        return due, None
    local_now = now.astimezone(zone(schedule.timezone))
    latest: datetime = croniter(schedule.cron, local_now + timedelta(microseconds=1)
                                ).get_prev(datetime)
    slot = max(due, latest.astimezone(UTC))
    return slot, next_occurrence(schedule.cron, schedule.timezone, max(slot, now))


def _claim_due(conn: SqlRunner, now: datetime, limit: int, late_after: float,
               grace: float) -> list[Firing]:
    lock = " FOR UPDATE SKIP LOCKED" if conn.dialect == "postgresql" else ""
    rows = conn.rows(f"SELECT {_COLUMNS} FROM threadline_schedules WHERE state = 'active' "
                     f"AND due_us <= :now ORDER BY due_us LIMIT :limit{lock}",
                     {"now": _us(now), "limit": limit})
    if not rows:
        return []
    plans: dict[str, tuple[Schedule, datetime, datetime | None, float]] = {}
    moves: dict[str, Any] = {}
    for i, schedule in enumerate(map(_from_row, rows)):
        slot, following = _slot_and_next(schedule, now)
        lateness = (now - slot).total_seconds()
        skipped = lateness > grace
        plans[schedule.id] = (schedule, slot, following, lateness)
        moves.update({f"id{i}": schedule.id, f"due{i}": _us(schedule.due_at or now),
                      f"next{i}": None if following is None else _us(following),
                      f"state{i}": "active" if following is not None
                      else "missed" if skipped else "done",
                      f"fired{i}": 0 if skipped else 1})
    # One guarded update for the whole batch: a row another process moved first stays out.
    values = ", ".join(f"(:id{i}, CAST(:due{i} AS BIGINT), CAST(:next{i} AS BIGINT), "
                       f":state{i}, CAST(:fired{i} AS INTEGER))" for i in range(len(rows)))
    moved = conn.rows(
        "UPDATE threadline_schedules SET due_us = v.column3, state = v.column4, "
        f"fired = fired + v.column5 FROM (VALUES {values}) AS v WHERE schedule_id = v.column1 "
        "AND threadline_schedules.due_us = v.column2 AND threadline_schedules.state = 'active' "
        "RETURNING schedule_id", moves)
    firings: list[Firing] = []
    for (schedule_id,) in moved:
        schedule, slot, following, lateness = plans[schedule_id]
        turn = None if lateness > grace else scheduled_turn(
            schedule, slot=slot, late_by=lateness if lateness > late_after else None,
            expires=following)
        firings.append(Firing(schedule=schedule, slot=slot, turn=turn))
    insert_new_turns(conn, [(f.turn, f.schedule.channel) for f in firings if f.turn is not None])
    return firings


def _next_due(conn: SqlRunner) -> datetime | None:
    rows = conn.rows("SELECT MIN(due_us) FROM threadline_schedules WHERE state = 'active'", {})
    return _at(rows[0][0]) if rows and rows[0][0] is not None else None


class SqlScheduleBook:
    """Schedules in a `SqlConversationStore`'s database; see the module docstring."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def add(self, schedule: Schedule) -> Schedule:
        await self.store.run("add a schedule", _add, [schedule], write=True)
        return schedule

    async def add_within(self, schedule: Schedule, limits: ScheduleLimits) -> Schedule:
        """Add a schedule a person asked for, within `limits`' caps (ScheduleRefused when
        they or the conversation have their cap)."""
        await self.store.run("add a schedule", _add_within, schedule, limits, write=True)
        return schedule

    async def add_many(self, schedules: Sequence[Schedule]) -> None:
        """Add schedules in one transaction (an import, a benchmark)."""
        await self.store.run("add schedules", _add, list(schedules), write=True)

    async def keep_configured(self, schedules: Sequence[Schedule]) -> None:
        """Make the named (configured) schedules these: added, updated, the others cancelled."""
        await self.store.run("keep the configured schedules", _keep_configured,
                             list(schedules), write=True)

    async def get(self, schedule_id: str) -> Schedule | None:
        found: Schedule | None = await self.store.run("read a schedule", _get, schedule_id)
        return found

    async def listed(self, *, conversation_id: str | None = None,
                   states: Sequence[State] = ("active",), limit: int = 100) -> list[Schedule]:
        """Schedules (of one conversation, or all), the soonest first."""
        found: list[Schedule] = await self.store.run("list schedules", _list, conversation_id,
                                                     list(states), limit)
        return found

    async def cancel(self, schedule_id: str) -> bool:
        """Stop an active schedule; False when there is none by that id (or it ended)."""
        done: bool = await self.store.run("cancel a schedule", _cancel, schedule_id,
                                          write=True)
        return done

    async def claim_due(self, now: datetime, *, limit: int = 100, late_after: float = 60.0,
                        grace: float = 86_400.0) -> list[Firing]:
        """Claim the schedules due at `now` and record their turns in the inbox (one
        transaction); what this process claimed."""
        firings: list[Firing] = await self.store.run(
            "claim due schedules", _claim_due, now, limit, late_after, grace, write=True)
        return firings

    async def next_due(self) -> datetime | None:
        """When the soonest active schedule falls due."""
        found: datetime | None = await self.store.run("read the next due schedule", _next_due)
        return found
