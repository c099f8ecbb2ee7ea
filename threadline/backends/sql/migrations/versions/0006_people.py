"""People: identities linked into persons, link codes, the forget audit, person memory keys.

Each user turn gains `speaker_key` / `speaker_space` (see `threadline.history.speakers`),
filled here for the turns already stored. On SQLite the word index gains a `speaker` column
holding both keys (written by the triggers, never read back), so a person's words are found
by MATCH itself, as a conversation's are; on PostgreSQL btree indexes on the keys let a search
read a person's rows first and rank them.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from threadline.history.speakers import stored_speaker_keys

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BACKFILL_BATCH = 5_000

_COLUMNS = "rowid, conv_key, content, participant_name, speaker"
_DELETE_COLUMNS = ("threadline_messages_fts, rowid, conv_key, content, participant_name, "
                   "speaker")


def _row(alias: str) -> str:
    """The word index values of the row `alias` (new, old or the table itself)."""
    prefix = f"{alias}." if alias else ""
    return (f"{prefix}row_id, {prefix}conv_key, {prefix}content, {prefix}participant_name, "
            f"coalesce({prefix}speaker_key || ' ' || {prefix}speaker_space, '')")


def _add(alias: str) -> str:
    return f"INSERT INTO threadline_messages_fts({_COLUMNS}) VALUES ({_row(alias)});"


def _remove(alias: str) -> str:
    return (f"INSERT INTO threadline_messages_fts({_DELETE_COLUMNS}) "
            f"VALUES ('delete', {_row(alias)});")


_SQLITE_WORD_INDEX = [
    "DROP TRIGGER threadline_messages_fts_insert",
    "DROP TRIGGER threadline_messages_fts_delete",
    "DROP TRIGGER threadline_messages_fts_update",
    "DROP TABLE threadline_messages_fts",
    """CREATE VIRTUAL TABLE threadline_messages_fts USING fts5(
        conv_key, content, participant_name, speaker,
        content='threadline_messages', content_rowid='row_id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"INSERT INTO threadline_messages_fts({_COLUMNS}) SELECT {_row('')} "
    "FROM threadline_messages WHERE is_summary = 0",
    "CREATE TRIGGER threadline_messages_fts_insert AFTER INSERT ON threadline_messages "
    f"WHEN new.is_summary = 0 BEGIN {_add('new')} END",
    "CREATE TRIGGER threadline_messages_fts_delete AFTER DELETE ON threadline_messages "
    f"WHEN old.is_summary = 0 BEGIN {_remove('old')} END",
    "CREATE TRIGGER threadline_messages_fts_update AFTER UPDATE OF content ON "
    f"threadline_messages WHEN old.is_summary = 0 BEGIN {_remove('old')} {_add('new')} END",
]


def _backfill() -> None:
    """Speaker keys for the user turns stored before this revision, in batches."""
    bind = op.get_bind()
    after = 0
    while True:
        rows = bind.execute(sa.text(
            "SELECT row_id, conversation_id, participant_id, scope FROM threadline_messages "
            "WHERE row_id > :after AND participant_kind = 'user' AND is_summary = false "
            "ORDER BY row_id LIMIT :n"), {"after": after, "n": BACKFILL_BATCH}).all()
        if not rows:
            return
        updates = []
        for row_id, conversation_id, participant_id, scope in rows:
            keys = stored_speaker_keys(conversation_id, "user", participant_id, scope,
                                       is_summary=False)
            if keys is not None:
                updates.append({"row": row_id, "key": keys[0], "space": keys[1]})
        if updates:
            bind.execute(sa.text("UPDATE threadline_messages SET speaker_key = :key, "
                                 "speaker_space = :space WHERE row_id = :row"), updates)
        after = rows[-1][0]


def upgrade() -> None:
    op.add_column("threadline_messages", sa.Column("speaker_key", sa.String(32)))
    op.add_column("threadline_messages", sa.Column("speaker_space", sa.String(32)))
    _backfill()
    op.create_index("ix_threadline_messages_speaker", "threadline_messages",
                    ["speaker_key", "row_id"])
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_WORD_INDEX:
            op.execute(statement)
    else:
        op.create_index("ix_threadline_messages_speaker_space", "threadline_messages",
                        ["speaker_space", "row_id"])

    op.create_table(
        "threadline_people",
        sa.Column("person_id", sa.String(64), primary_key=True),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "threadline_person_identities",
        sa.Column("identity", sa.String(512), primary_key=True),
        sa.Column("person_id", sa.String(64), nullable=False),
        sa.Column("linked_by", sa.String(16), nullable=False),
        sa.Column("linked_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_person_identities_person", "threadline_person_identities",
                    ["person_id"])
    op.create_table(
        "threadline_link_codes",
        sa.Column("code", sa.String(32), primary_key=True),
        sa.Column("identity", sa.String(512), nullable=False),
        sa.Column("expires_us", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "threadline_forget_audit",
        sa.Column("row_id", sa.BigInteger().with_variant(sa.Integer, "sqlite"),
                  primary_key=True, autoincrement=True),
        sa.Column("person_id", sa.String(64), nullable=False),
        sa.Column("counts_json", sa.Text, nullable=False),
        sa.Column("forgotten_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops people or history; restore a backup.")
