"""The `TurnInbox` of `SqlConversationStore`: two tables beside the history, on both databases.

Each operation is one short transaction. `receive` inserts nothing when the turn is already in
the inbox or in the history (a redelivery after the inbox row was pruned). Several worker
processes share the tables; who answers a conversation is decided by the pipeline's
conversation lock, not here. An edit or a deletion changes a row only in the state (and
text) it read it in, so a worker taking or finishing the turn meanwhile is never overwritten:
the operation reads again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from threadline.backends.sql.operations import SqlRunner, durable_later, one_write
from threadline.history.codec import message_from_dict, message_to_dict
from threadline.history.inbox import Delivery, DeliveryState, InboxTurn, TimedTurn, TurnState
from threadline.history.model import StoredMessage

# How the store runs one operation: (what it does, whether it writes, the function, its args).
RunOperation = Callable[..., Awaitable[Any]]

_OPEN = "state IN ('received', 'answering')"


def _now_us() -> int:
    return time.time_ns() // 1000


@one_write
def _insert_turn(conn: SqlRunner, message: StoredMessage, channel: str | None) -> bool:
    # One statement: a turn the history already holds (its inbox row pruned) is not new either.
    now = _now_us()
    return conn.rowcount(
        "INSERT INTO threadline_inbox (turn_id, conversation_id, channel, state, attempts, "
        "message_json, received_us, updated_us) SELECT CAST(:turn_id AS VARCHAR(255)), "
        "CAST(:cid AS VARCHAR(255)), CAST(:channel AS VARCHAR(255)), 'received', 0, "
        "CAST(:message AS TEXT), CAST(:now AS BIGINT), CAST(:now AS BIGINT) WHERE NOT EXISTS "
        "(SELECT 1 FROM threadline_messages WHERE id = :stored_id) ON CONFLICT DO NOTHING",
        {"turn_id": message.id, "stored_id": message.id, "cid": message.conversation_id,
         "channel": channel, "message": _encode(message), "now": now},
    ) == 1


def insert_new_turns(conn: SqlRunner, turns: Sequence[tuple[StoredMessage, str | None]]) -> None:
    """Record turns no platform delivered (a schedule's slots, claimed once by their caller) as
    to be answered, in one statement inside the caller's transaction."""
    if not turns:
        return
    now = _now_us()
    rows = ", ".join(f"(:turn_id{i}, :cid{i}, :channel{i}, 'received', 0, :message{i}, :now, "
                     ":now)" for i in range(len(turns)))
    params: dict[str, Any] = {"now": now}
    for i, (message, channel) in enumerate(turns):
        params.update({f"turn_id{i}": message.id, f"cid{i}": message.conversation_id,
                       f"channel{i}": channel, f"message{i}": _encode(message)})
    conn.rowcount(
        "INSERT INTO threadline_inbox (turn_id, conversation_id, channel, state, attempts, "
        f"message_json, received_us, updated_us) VALUES {rows} ON CONFLICT DO NOTHING", params)


def _open_turns(conn: SqlRunner, conversation_id: str) -> list[InboxTurn]:
    rows = conn.rows(
        f"SELECT message_json, channel, state, attempts, error FROM threadline_inbox "
        f"WHERE conversation_id = :cid AND {_OPEN} ORDER BY row_id",
        {"cid": conversation_id})
    return [InboxTurn(message=message_from_dict(json.loads(row[0])), channel=row[1],
                      state=TurnState(row[2]), attempts=int(row[3]), error=row[4])
            for row in rows]


def _open_turns_timed(conn: SqlRunner, conversation_id: str) -> list[TimedTurn]:
    rows = conn.rows(
        f"SELECT message_json, channel, state, attempts, error, received_us, burst_id "
        f"FROM threadline_inbox WHERE conversation_id = :cid AND {_OPEN} ORDER BY row_id",
        {"cid": conversation_id})
    return [TimedTurn(turn=InboxTurn(message=message_from_dict(json.loads(row[0])),
                                     channel=row[1], state=TurnState(row[2]),
                                     attempts=int(row[3]), error=row[4]),
                      received_at=int(row[5]) / 1e6, burst=row[6])
            for row in rows]


def _claim_burst(conn: SqlRunner, burst: str, turn_ids: Sequence[str]) -> list[str]:
    # Only turns still open and unclaimed: a burst, once claimed, is what every process sees.
    return [turn_id for turn_id in turn_ids if conn.rowcount(
        f"UPDATE threadline_inbox SET burst_id = :burst WHERE turn_id = :turn_id AND {_OPEN} "
        "AND burst_id IS NULL", {"burst": burst, "turn_id": turn_id}) == 1]


def _conversations_waiting(conn: SqlRunner, limit: int) -> list[str]:
    rows = conn.rows(
        f"SELECT conversation_id, MIN(row_id) AS first FROM threadline_inbox WHERE {_OPEN} "
        "GROUP BY conversation_id ORDER BY first LIMIT :limit", {"limit": limit})
    return [str(row[0]) for row in rows]


@durable_later
@one_write
def _take_next(conn: SqlRunner, conversation_id: str) -> InboxTurn | None:
    # One statement picks the oldest open turn and takes it. On PostgreSQL an edit or deletion
    # may change that row between the pick and the take (the take re-checks it is open); then
    # the next one is picked, if any is open. Its commit need not wait for the disk: the turn's
    # copy in the history, written next, does, and a take lost with the database server leaves
    # the turn open, taken again after the restart (its attempt uncounted: `max_attempts`
    # guards against a turn that kills our process, which loses no commit).
    while True:
        rows = conn.rows(
            "UPDATE threadline_inbox SET state = 'answering', attempts = attempts + 1, "
            "updated_us = :now WHERE turn_id = (SELECT turn_id FROM threadline_inbox WHERE "
            f"conversation_id = :cid AND {_OPEN} ORDER BY row_id LIMIT 1) AND {_OPEN} "
            "RETURNING message_json, channel, attempts, error",
            {"cid": conversation_id, "now": _now_us()})
        if rows:
            message_json, channel, attempts, error = rows[0]
            return InboxTurn(message=message_from_dict(json.loads(message_json)),
                             channel=channel, state=TurnState.ANSWERING,
                             attempts=int(attempts), error=error)
        if not conn.rows(f"SELECT 1 FROM threadline_inbox WHERE conversation_id = :cid "
                         f"AND {_OPEN} LIMIT 1", {"cid": conversation_id}):
            return None


def _read_back(conn: SqlRunner, turn_id: str) -> tuple[str, str] | None:
    # A read: the row holds any edit or deletion committed before it, the history every
    # later one (`TurnPipeline.record`); a write here would cost a commit for nothing.
    rows = conn.rows(f"SELECT message_json, state FROM threadline_inbox "
                     f"WHERE turn_id = :turn_id AND {_OPEN}", {"turn_id": turn_id})
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


@one_write
def _take_back(conn: SqlRunner, turn_id: str, read: str) -> bool:
    # Reopened by an edit to be answered again (`answer_again`) since it was taken: taken
    # once more as read, so the edited turn is answered here, not again after this answer.
    return conn.rowcount(
        "UPDATE threadline_inbox SET state = 'answering', updated_us = :now "
        "WHERE turn_id = :turn_id AND state = 'received' AND message_json = :read",
        {"turn_id": turn_id, "read": read, "now": _now_us()}) == 1


@one_write
def finish_turn(conn: SqlRunner, turn_id: str, state: str, error: str | None) -> bool:
    """`TurnInbox.finish` in the caller's transaction (alone, or with a delivered reply's
    other writes: `SqlWritesTogether`)."""
    # An answered turn's text lives on in the history; the inbox keeps only its outcome. The
    # same statement says whether other turns of the conversation are open (its owner would
    # otherwise read them once more to find none).
    forget_text = ", message_json = NULL" if state == TurnState.ANSWERED.value else ""
    rows = conn.rows(
        f"UPDATE threadline_inbox SET state = :state, error = :error, updated_us = :now"
        f"{forget_text} WHERE turn_id = :turn_id AND state = 'answering' RETURNING "
        f"(SELECT count(*) FROM threadline_inbox AS other WHERE other.conversation_id = "
        f"threadline_inbox.conversation_id AND other.turn_id <> :other_id AND other.{_OPEN})",
        {"turn_id": turn_id, "other_id": turn_id, "state": state, "error": error,
         "now": _now_us()})
    return not rows or int(rows[0][0]) > 0


def _edit_open(conn: SqlRunner, turn_id: str, content: str) -> str | None:
    while True:
        rows = conn.rows(f"SELECT message_json, state FROM threadline_inbox "
                         f"WHERE turn_id = :turn_id AND {_OPEN}", {"turn_id": turn_id})
        if not rows:
            return None
        read, state = rows[0]
        edited = {**json.loads(read), "content": content}
        # Only the row as read is changed (and its state as read is returned): a worker may
        # have taken or finished it, or `answer_again` replaced it, since (on PostgreSQL the
        # read takes no lock); then read it again.
        if conn.rowcount(
                "UPDATE threadline_inbox SET message_json = :message, updated_us = :now "
                "WHERE turn_id = :turn_id AND state = :was AND message_json = :read",
                {"turn_id": turn_id, "message": _encode(message_from_dict(edited)),
                 "was": state, "read": read, "now": _now_us()}) == 1:
            return str(state)


def _cancel_open(conn: SqlRunner, turn_id: str) -> str | None:
    while True:
        rows = conn.rows(f"SELECT state FROM threadline_inbox WHERE turn_id = :turn_id "
                         f"AND {_OPEN}", {"turn_id": turn_id})
        if not rows:
            return None
        # Changed only in the state it was read in (a worker may be taking it meanwhile).
        if conn.rowcount(
                "UPDATE threadline_inbox SET state = 'cancelled', message_json = NULL, "
                "updated_us = :now WHERE turn_id = :turn_id AND state = :was",
                {"turn_id": turn_id, "was": rows[0][0], "now": _now_us()}) == 1:
            return str(rows[0][0])


@one_write
def _answer_again(conn: SqlRunner, message: StoredMessage) -> bool:
    return conn.rowcount(
        "UPDATE threadline_inbox SET state = 'received', attempts = 0, error = NULL, "
        "message_json = :message, updated_us = :now WHERE turn_id = :turn_id "
        "AND state <> 'received'",
        {"turn_id": message.id, "message": _encode(message), "now": _now_us()}) == 1


def _encode(message: StoredMessage) -> str:
    return json.dumps(message_to_dict(message), ensure_ascii=False, sort_keys=True,
                      default=repr)


def _delivery_from(row: Sequence[Any]) -> Delivery:
    return Delivery(reply=message_from_dict(json.loads(row[0])), state=DeliveryState(row[1]),
                    platform_ids=tuple(json.loads(row[2])) if row[2] else ())


def _select_delivery(conn: SqlRunner, key: str) -> Delivery | None:
    rows = conn.rows(
        "SELECT message_json, state, platform_ids FROM threadline_deliveries "
        "WHERE delivery_key = :key", {"key": key})
    return _delivery_from(rows[0]) if rows else None


@one_write
def _start_delivery(conn: SqlRunner, reply: StoredMessage) -> Delivery | None:
    inserted = conn.rowcount(
        "INSERT INTO threadline_deliveries (delivery_key, conversation_id, state, message_json, "
        "updated_us) VALUES (:key, :cid, 'delivering', :message, :now) ON CONFLICT DO NOTHING",
        {"key": reply.id, "cid": reply.conversation_id, "message": _encode(reply),
         "now": _now_us()})
    return None if inserted == 1 else _select_delivery(conn, reply.id)


@one_write
def _update_delivery(conn: SqlRunner, reply: StoredMessage) -> None:
    conn.rowcount(
        "UPDATE threadline_deliveries SET message_json = :message, updated_us = :now "
        "WHERE delivery_key = :key AND state = 'delivering'",
        {"key": reply.id, "message": _encode(reply), "now": _now_us()})


@one_write
def record_delivered(conn: SqlRunner, key: str, platform_ids: Sequence[str]) -> None:
    """`TurnInbox.finish_delivery` in the caller's transaction (see `finish_turn`)."""
    conn.rowcount(
        "UPDATE threadline_deliveries SET state = 'delivered', platform_ids = :ids, "
        "updated_us = :now WHERE delivery_key = :key",
        {"key": key, "ids": json.dumps(list(platform_ids)), "now": _now_us()})


class SqlTurnInbox:
    """The inbox in the store's database; `run` is the store's way of running an operation."""

    def __init__(self, run: RunOperation) -> None:
        self._run = run

    async def receive(self, message: StoredMessage, *, channel: str | None) -> bool:
        inserted: bool = await self._run("record an inbound turn", True, _insert_turn, message,
                                         channel)
        return inserted

    async def open_turns(self, conversation_id: str) -> list[InboxTurn]:
        turns: list[InboxTurn] = await self._run("read the inbox", False, _open_turns,
                                                 conversation_id)
        return turns

    async def open_turns_timed(self, conversation_id: str) -> list[TimedTurn]:
        turns: list[TimedTurn] = await self._run("read the inbox", False, _open_turns_timed,
                                                 conversation_id)
        return turns

    async def claim_burst(self, burst: str, turn_ids: Sequence[str]) -> list[str]:
        claimed: list[str] = await self._run("claim a burst of turns", True, _claim_burst,
                                             burst, list(turn_ids))
        return claimed

    async def conversations_waiting(self, *, limit: int = 100) -> list[str]:
        waiting: list[str] = await self._run("read the inbox", False, _conversations_waiting,
                                             limit)
        return waiting

    async def take_next(self, conversation_id: str) -> InboxTurn | None:
        taken: InboxTurn | None = await self._run("take a turn", True, _take_next,
                                                  conversation_id)
        return taken

    async def retake(self, turn_id: str) -> StoredMessage | None:
        while True:
            found: tuple[str, str] | None = await self._run("read back a turn", False,
                                                            _read_back, turn_id, few=True)
            if found is None:
                return None
            read, state = found
            if state == TurnState.ANSWERING.value or await self._run(
                    "take back a reopened turn", True, _take_back, turn_id, read):
                return message_from_dict(json.loads(read))

    async def finish(self, turn_id: str, state: TurnState, *, error: str | None = None) -> bool:
        others: bool = await self._run("finish a turn", True, finish_turn, turn_id, state.value,
                                       error)
        return others

    async def edit_open(self, turn_id: str, content: str) -> TurnState | None:
        state: str | None = await self._run("edit an open turn", True, _edit_open, turn_id,
                                            content)
        return TurnState(state) if state is not None else None

    async def cancel_open(self, turn_id: str) -> TurnState | None:
        state: str | None = await self._run("cancel an open turn", True, _cancel_open, turn_id)
        return TurnState(state) if state is not None else None

    async def answer_again(self, message: StoredMessage) -> bool:
        reopened: bool = await self._run("answer an edited turn again", True, _answer_again,
                                         message)
        return reopened

    async def start_delivery(self, reply: StoredMessage) -> Delivery | None:
        existing: Delivery | None = await self._run("claim a reply", True, _start_delivery,
                                                    reply)
        return existing

    async def update_delivery(self, reply: StoredMessage) -> None:
        await self._run("update a reply being posted", True, _update_delivery, reply)

    async def finish_delivery(self, reply_id: str, platform_ids: Sequence[str]) -> None:
        await self._run("record a delivered reply", True, record_delivered, reply_id,
                        list(platform_ids))

    async def delivery(self, reply_id: str) -> Delivery | None:
        found: Delivery | None = await self._run("read a reply", False, _select_delivery,
                                                 reply_id)
        return found
