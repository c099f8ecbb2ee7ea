"""The SQL schema of the conversation store and the mapping between rows and messages.

The tables are declared once here with SQLAlchemy; the Alembic migrations create them (and the
full-text indexes, which differ per database), and both SQL backends read rows through
`row_to_message`. Timestamps are integer microseconds since the epoch (UTC): exact, sortable and
the same on every database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from threadline.history.model import (
    MessageMetadata,
    Participant,
    StoredMessage,
    ToolExchange,
)
from threadline.history.search import conversation_key
from threadline.history.speakers import speaker_keys

metadata = MetaData()

messages = Table(
    "threadline_messages",
    metadata,
    Column("row_id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
           autoincrement=True),
    Column("id", String(255), nullable=False, unique=True),
    Column("conversation_id", String(512), nullable=False),
    Column("conv_key", String(32), nullable=False),
    Column("sequence", BigInteger, nullable=False),
    Column("participant_kind", String(16), nullable=False),
    Column("participant_id", String(255), nullable=False),
    Column("participant_name", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("ts_us", BigInteger, nullable=False),
    Column("scope", String(16), nullable=False),
    Column("channel_type", String(64), nullable=False),
    Column("channel_name", Text),
    Column("channel_id", String(255)),
    Column("thread_id", String(255)),
    Column("message_id", String(255)),
    Column("mentions", Text, nullable=False, default=""),
    Column("is_summary", Boolean, nullable=False, default=False),
    Column("has_cjk", Boolean, nullable=False, default=False),
    Column("tool_json", Text),
    Column("extra_json", Text),
    Column("token_count", Integer, nullable=False),
    # Person memory's index keys (see threadline.history.speakers); NULL when no person spoke.
    Column("speaker_key", String(32)),
    Column("speaker_space", String(32)),
    UniqueConstraint("conversation_id", "sequence", name="uq_threadline_messages_seq"),
    UniqueConstraint("conversation_id", "message_id", name="uq_threadline_messages_platform_id"),
    Index("ix_threadline_messages_summary", "conversation_id", "sequence",
          sqlite_where=text("is_summary = true"), postgresql_where=text("is_summary = true")),
)

conversations = Table(
    "threadline_conversations",
    metadata,
    Column("conversation_id", String(512), primary_key=True),
    Column("last_sequence", BigInteger, nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("last_activity_us", BigInteger, nullable=False),
)

# Row order of SELECT_COLUMNS, shared by every query that reads messages.
SELECT_COLUMNS: tuple[str, ...] = (
    "id", "conversation_id", "sequence", "participant_kind", "participant_id",
    "participant_name", "content", "ts_us", "scope", "channel_type", "channel_name",
    "channel_id", "thread_id", "message_id", "mentions", "is_summary", "tool_json",
    "extra_json", "token_count",
)
SELECT_LIST = ", ".join(SELECT_COLUMNS)
SELECT_LIST_M = ", ".join(f"m.{column}" for column in SELECT_COLUMNS)

_MENTION_SEPARATOR = "\x1f"
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_EXTRA: dict[str, Any] = {}
_Record = TypeVar("_Record", MessageMetadata, StoredMessage)
_METADATA_FIELDS = (
    "channel_type", "channel_name", "channel_id", "thread_id", "message_id", "mentions",
    "is_summary", "summary_of", "reply_to_message_id", "reply_to_participant_id", "extra",
)
_MESSAGE_FIELDS = (
    "id", "conversation_id", "participant", "content", "timestamp", "scope", "metadata",
    "tool_exchanges", "sequence", "token_count",
)


def _trusted_builder(cls: type[_Record], names: tuple[str, ...]) -> Callable[..., _Record]:
    """A function that makes a `cls` record from values validated when the turn was appended,
    passed in the field order `names`.

    Reading back 100 turns through the validating constructors cost about 10 us a turn, more
    than SQLite's own work for the query; a stored row needs no second check. The slot
    descriptors are set directly (the frozen class refuses ordinary attribute writes), one
    call per field written out (as `dataclasses` writes its `__init__`): looping over the
    setters took twice as long, which showed in `get` against raw sqlite3 (bench/versus.py).
    """
    declared = {f.name for f in fields(cls)}
    if declared != set(names):
        raise ImportError(
            f"sql_schema reads {cls.__name__} fields {sorted(names)} but the model declares "
            f"{sorted(declared)}; update row_to_message and the schema together"
        )
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls}
    scope.update({f"set_{name}": getattr(cls, name).__set__ for name in names})
    source = (f"def build({', '.join(names)}):\n    record = new(cls)\n"
              + "".join(f"    set_{name}(record, {name})\n" for name in names)
              + "    return record\n")
    exec(source, scope)  # fixed text, built from the model's own field names
    built: Callable[..., _Record] = scope["build"]
    return built


_metadata = _trusted_builder(MessageMetadata, _METADATA_FIELDS)
_message = _trusted_builder(StoredMessage, _MESSAGE_FIELDS)


def to_micros(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def has_cjk(content: str) -> bool:
    """Whether a text holds characters written without spaces, for the trigram index."""
    return bool(_CJK.search(content))


def message_to_row(message: StoredMessage, *, sequence: int, token_count: int) -> dict[str, Any]:
    """The column values of one message about to be inserted."""
    meta = message.metadata
    extra: dict[str, Any] = {}
    if meta.summary_of is not None:
        extra["summary_of"] = list(meta.summary_of)
    if meta.reply_to_message_id is not None:
        extra["reply_to_message_id"] = meta.reply_to_message_id
    if meta.reply_to_participant_id is not None:
        extra["reply_to_participant_id"] = meta.reply_to_participant_id
    if meta.extra:
        extra["extra"] = dict(meta.extra)
    tools = [exchange.as_dict() for exchange in message.tool_exchanges]
    speaker, space = speaker_keys(message) or (None, None)
    return {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "conv_key": conversation_key(message.conversation_id),
        "sequence": sequence,
        "participant_kind": message.participant.kind,
        "participant_id": message.participant.id,
        "participant_name": message.participant.display_name,
        "content": message.content,
        "ts_us": to_micros(message.timestamp),
        "scope": message.scope,
        "channel_type": meta.channel_type,
        "channel_name": meta.channel_name,
        "channel_id": meta.channel_id,
        "thread_id": meta.thread_id,
        "message_id": meta.message_id,
        "mentions": _MENTION_SEPARATOR.join(meta.mentions),
        "is_summary": meta.is_summary,
        "has_cjk": has_cjk(message.content),
        "tool_json": json.dumps(tools, sort_keys=True, ensure_ascii=False) if tools else None,
        "extra_json": json.dumps(extra, sort_keys=True, ensure_ascii=False, default=str)
        if extra else None,
        "token_count": token_count,
        "speaker_key": speaker,
        "speaker_space": space,
    }


# Rows whose turns are kept decoded (see `row_to_message`), and the characters of text (content
# and JSON) above which a row is decoded each time instead: at most about 64 MB kept, a
# knowledge section being 1 to 2 KB.
DECODED_ROWS = 4096
DECODED_ROW_CHARS = 8000


def row_to_message(row: Sequence[Any]) -> StoredMessage:
    """A message from a row in SELECT_COLUMNS order.

    The same rows are read again and again (a knowledge source's sections come back for
    question after question, each search reading 30 per text and the sections found by meaning
    beside them), and decoding one (its JSON, its metadata, its speaker) cost about 22 us, 3
    ms of a knowledge search's 130 rows. So turns are kept by their whole row, which any change
    to the turn changes: a kept turn is never stale. Turns are frozen; the memory backend also
    hands the same one to every reader. A long row (a tool's large result) is not kept.
    """
    row = tuple(row)
    content, tool_json, extra_json = row[6], row[16], row[17]
    if len(content) + len(tool_json or "") + len(extra_json or "") > DECODED_ROW_CHARS:
        return _decoded.__wrapped__(row)
    return _decoded(row)


@lru_cache(maxsize=DECODED_ROWS)
def _decoded(row: tuple[Any, ...]) -> StoredMessage:
    (id_, conversation_id, sequence, kind, participant_id, name, content, ts_us, scope,
     channel_type, channel_name, channel_id, thread_id, message_id, mentions, is_summary,
     tool_json, extra_json, token_count) = row
    participant = Participant(kind=kind, id=participant_id, display_name=name)
    extra = json.loads(extra_json) if extra_json else _NO_EXTRA
    summary_of = extra.get("summary_of")
    meta = _metadata(
        channel_type, channel_name, channel_id, thread_id, message_id,
        tuple(mentions.split(_MENTION_SEPARATOR)) if mentions else (),
        bool(is_summary),
        (summary_of[0], summary_of[1]) if summary_of else None,
        extra.get("reply_to_message_id"),
        extra.get("reply_to_participant_id"),
        extra.get("extra") or {},
    )
    tools = tuple(ToolExchange.from_dict(t) for t in json.loads(tool_json)) if tool_json else ()
    return _message(
        id_, conversation_id, participant, content, from_micros(ts_us), scope, meta, tools,
        sequence, token_count,
    )


inbox = Table(
    "threadline_inbox",
    metadata,
    Column("row_id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
           autoincrement=True),
    Column("turn_id", String(255), nullable=False, unique=True),
    Column("conversation_id", String(512), nullable=False),
    Column("channel", String(255)),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("message_json", Text),
    Column("received_us", BigInteger, nullable=False),
    Column("updated_us", BigInteger, nullable=False),
    # The burst that claimed the turn (its first turn's id): `threadline.bursts`.
    Column("burst_id", String(255)),
    Index("ix_threadline_inbox_open", "conversation_id", "row_id",
          sqlite_where=text("state IN ('received', 'answering')"),
          postgresql_where=text("state IN ('received', 'answering')")),
)

deliveries = Table(
    "threadline_deliveries",
    metadata,
    Column("delivery_key", String(600), primary_key=True),
    Column("conversation_id", String(512), nullable=False),
    Column("state", String(16), nullable=False),
    Column("message_json", Text, nullable=False),
    Column("platform_ids", Text),
    Column("updated_us", BigInteger, nullable=False),
)
