"""Everything kept about one person, read and deleted in batches (shared by export and forget).

What is kept about a person: the turns their identities wrote (found by `speaker_key`), the
agents' replies to those turns (`{turn id}>{agent}`), the rolling summaries of the
conversations they spoke in (from the first one covering them on: each summary carries the
previous one forward), the reply records made in those conversations since they spoke, the
inbox rows of their turns and the delivery rows of the replies. Each batch is one transaction
over at most `BATCH` of their turns, so memory stays bounded whatever their number, and a run
that dies half-way is finished by running it again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.schema import SELECT_LIST, row_to_message, to_micros
from threadline.history.model import StoredMessage
from threadline.people.directory import Batch

BATCH = 1_000


def _in(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    names = []
    for n, value in enumerate(values):
        params[f"{prefix}{n}"] = value
        names.append(f":{prefix}{n}")
    return ", ".join(names) or "NULL"


def _messages(rows: Sequence[Sequence[Any]]) -> list[StoredMessage]:
    return [row_to_message(row[1:]) for row in rows]


def _agents(conn: SqlRunner, conversation_id: str, known: dict[str, list[str]]) -> list[str]:
    """The agents that spoke in a conversation (their replies' ids end in `>agent`)."""
    if conversation_id not in known:
        known[conversation_id] = [r[0] for r in conn.rows(
            "SELECT DISTINCT participant_id FROM threadline_messages WHERE conversation_id = :cid "
            "AND participant_kind = 'agent'", {"cid": conversation_id})]
    return known[conversation_id]


def read_batch(conn: SqlRunner, keys: Sequence[str], after_row: int, *,
               agents: dict[str, list[str]], summarized: set[str],
               details: bool) -> Batch | None:
    """The next batch of the person's turns after row `after_row`, or None when done.

    `agents` caches each conversation's agents across batches; `summarized` holds the
    conversations whose summaries were already read (each summary comes once).
    """
    params: dict[str, Any] = {"after": after_row, "n": BATCH}
    rows = conn.rows(
        f"SELECT row_id, {SELECT_LIST} FROM threadline_messages WHERE speaker_key IN "
        f"({_in('k', keys, params)}) AND row_id > :after ORDER BY row_id LIMIT :n", params)
    if not rows:
        return None
    batch = Batch(turns=_messages(rows), last_row=int(rows[-1][0]))
    reply_ids = [f"{t.id}>{agent}" for t in batch.turns
                 for agent in _agents(conn, t.conversation_id, agents)]
    for start in range(0, len(reply_ids), BATCH):
        params = {}
        listed = _in("r", reply_ids[start:start + BATCH], params)
        batch.replies += _messages(conn.rows(
            f"SELECT row_id, {SELECT_LIST} FROM threadline_messages WHERE id IN ({listed})",
            params))
        batch.deliveries += [
            {"delivery_key": r[0], "conversation_id": r[1], "state": r[2],
             "message_json": r[3] if details else None}
            for r in conn.rows("SELECT delivery_key, conversation_id, state, message_json "
                               f"FROM threadline_deliveries WHERE delivery_key IN ({listed})",
                               params)]
    first_said: dict[str, tuple[int, int]] = {}
    for turn in batch.turns:
        sequence, ts = turn.sequence or 0, to_micros(turn.timestamp)
        old = first_said.get(turn.conversation_id)
        first_said[turn.conversation_id] = (min(old[0], sequence), min(old[1], ts)) if old else (
            sequence, ts)
    for conversation_id, (sequence, ts) in first_said.items():
        if conversation_id not in summarized:
            summarized.add(conversation_id)
            summaries = _messages(conn.rows(
                f"SELECT row_id, {SELECT_LIST} FROM threadline_messages WHERE "
                "conversation_id = :cid AND is_summary = true ORDER BY sequence",
                {"cid": conversation_id}))
            batch.summaries += [s for s in summaries if s.metadata.summary_of is None
                                or s.metadata.summary_of[1] >= sequence]
        columns = "id, conversation_id, agent, created_us, reply, detail_json" if details else (
            "id, conversation_id, agent, created_us")
        batch.records += [dict(zip(("id", "conversation_id", "agent", "created_us", "reply",
                                    "detail_json"), r, strict=False)) for r in conn.rows(
            f"SELECT {columns} FROM threadline_reply_records WHERE conversation_id = :cid "
            "AND created_us >= :ts", {"cid": conversation_id, "ts": ts})]
    params = {}
    listed = _in("t", [t.id for t in batch.turns], params)
    batch.inbox = [{"turn_id": r[0], "state": r[1], "message_json": r[2] if details else None}
                   for r in conn.rows("SELECT turn_id, state, message_json FROM threadline_inbox "
                                      f"WHERE turn_id IN ({listed})", params)]
    return batch


def delete_batch(conn: SqlRunner, keys: Sequence[str], after_row: int, *,
                 agents: dict[str, list[str]], summarized: set[str]) -> dict[str, int] | None:
    """Delete the next batch of the person's turns and what hangs on them; counts, or None."""
    batch = read_batch(conn, keys, after_row, agents=agents, summarized=summarized,
                       details=False)
    if batch is None:
        return None
    counts = {"turns": 0, "replies": 0, "summaries": 0, "reply_records": 0, "inbox": 0,
              "deliveries": 0, "http_replies": 0}
    # By id (unique across conversations), a few statements per batch: a statement per
    # conversation cost about 130 us a deleted turn.
    per_conversation: dict[str, int] = {}
    for name, messages in (("turns", batch.turns), ("replies", batch.replies),
                           ("summaries", batch.summaries)):
        for start in range(0, len(messages), BATCH):
            params: dict[str, Any] = {}
            chunk = [m.id for m in messages[start:start + BATCH]]
            counts[name] += conn.rowcount(
                f"DELETE FROM threadline_messages WHERE id IN ({_in('i', chunk, params)})",
                params)
        for message in messages:
            cid = message.conversation_id
            per_conversation[cid] = per_conversation.get(cid, 0) + 1
    for conversation_id, gone in per_conversation.items():
        conn.rowcount("UPDATE threadline_conversations SET message_count = message_count - :n "
                      "WHERE conversation_id = :cid", {"n": gone, "cid": conversation_id})
    for table, column, name, values in (
        ("threadline_reply_records", "id", "reply_records", [r["id"] for r in batch.records]),
        ("threadline_deliveries", "delivery_key", "deliveries",
         [d["delivery_key"] for d in batch.deliveries]),
        # Replies kept for an `http` caller, by the turn they answer.
        ("threadline_http_replies", "turn_id", "http_replies", [t.id for t in batch.turns]),
    ):
        params = {}
        if values:
            counts[name] += conn.rowcount(
                f"DELETE FROM {table} WHERE {column} IN ({_in('v', values, params)})", params)
    if batch.inbox:
        params = {}
        # The row stays (it says the platform message was received, so a redelivery is not
        # answered again); its text goes, and an open turn is given up.
        counts["inbox"] += conn.rowcount(
            "UPDATE threadline_inbox SET message_json = NULL, state = CASE WHEN state IN "
            "('received', 'answering') THEN 'given_up' ELSE state END WHERE turn_id IN "
            f"({_in('t', [i['turn_id'] for i in batch.inbox], params)})", params)
    return counts


def record_forgotten(conn: SqlRunner, audit_id: str, identities: Sequence[str],
                     counts: dict[str, int], now_us: int) -> None:
    """Unlink the identities, drop their link codes, link requests and wrong-code counts and
    the person, and write the audit line:
    who (an opaque id), how many of each, when; never any content."""
    params: dict[str, Any] = {}
    listed = _in("i", identities, params)
    conn.rowcount(f"DELETE FROM threadline_link_codes WHERE identity IN ({listed})", params)
    conn.rowcount(f"DELETE FROM threadline_link_requests WHERE issuer IN ({listed}) "
                  f"OR redeemer IN ({listed})", params)
    conn.rowcount(f"DELETE FROM threadline_link_guesses WHERE identity IN ({listed})", params)
    conn.rowcount(f"DELETE FROM threadline_person_identities WHERE identity IN ({listed})",
                  params)
    conn.rowcount("DELETE FROM threadline_people WHERE person_id = :p", {"p": audit_id})
    conn.rowcount("INSERT INTO threadline_forget_audit (person_id, counts_json, forgotten_us) "
                  "VALUES (:p, :c, :t)", {"p": audit_id, "c": json.dumps(counts, sort_keys=True),
                                          "t": now_us})
