"""The conversation store: messages, conversations and the full-text indexes.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_SQLITE_FTS = [
    # Word index: Porter stemming over unicode61; the conversation key is an indexed column so
    # MATCH itself scopes a search to one conversation.
    """CREATE VIRTUAL TABLE threadline_messages_fts USING fts5(
        conv_key, content, participant_name,
        content='threadline_messages', content_rowid='row_id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    # Trigram index, only for turns holding text written without spaces (CJK).
    """CREATE VIRTUAL TABLE threadline_messages_trigram USING fts5(
        conv_key, content,
        content='threadline_messages', content_rowid='row_id', tokenize='trigram')""",
    """CREATE TRIGGER threadline_messages_fts_insert AFTER INSERT ON threadline_messages
       WHEN new.is_summary = 0 BEGIN
         INSERT INTO threadline_messages_fts(rowid, conv_key, content, participant_name)
         VALUES (new.row_id, new.conv_key, new.content, new.participant_name);
       END""",
    """CREATE TRIGGER threadline_messages_trigram_insert AFTER INSERT ON threadline_messages
       WHEN new.is_summary = 0 AND new.has_cjk = 1 BEGIN
         INSERT INTO threadline_messages_trigram(rowid, conv_key, content)
         VALUES (new.row_id, new.conv_key, new.content);
       END""",
    """CREATE TRIGGER threadline_messages_fts_delete AFTER DELETE ON threadline_messages
       WHEN old.is_summary = 0 BEGIN
         INSERT INTO threadline_messages_fts(threadline_messages_fts, rowid, conv_key, content,
                                             participant_name)
         VALUES ('delete', old.row_id, old.conv_key, old.content, old.participant_name);
       END""",
    """CREATE TRIGGER threadline_messages_trigram_delete AFTER DELETE ON threadline_messages
       WHEN old.is_summary = 0 AND old.has_cjk = 1 BEGIN
         INSERT INTO threadline_messages_trigram(threadline_messages_trigram, rowid, conv_key,
                                                 content)
         VALUES ('delete', old.row_id, old.conv_key, old.content);
       END""",
    """CREATE TRIGGER threadline_messages_fts_update AFTER UPDATE OF content ON threadline_messages
       WHEN old.is_summary = 0 BEGIN
         INSERT INTO threadline_messages_fts(threadline_messages_fts, rowid, conv_key, content,
                                             participant_name)
         VALUES ('delete', old.row_id, old.conv_key, old.content, old.participant_name);
         INSERT INTO threadline_messages_fts(rowid, conv_key, content, participant_name)
         VALUES (new.row_id, new.conv_key, new.content, new.participant_name);
       END""",
    """CREATE TRIGGER threadline_messages_trigram_update_old AFTER UPDATE OF content
       ON threadline_messages WHEN old.is_summary = 0 AND old.has_cjk = 1 BEGIN
         INSERT INTO threadline_messages_trigram(threadline_messages_trigram, rowid, conv_key,
                                                 content)
         VALUES ('delete', old.row_id, old.conv_key, old.content);
       END""",
    """CREATE TRIGGER threadline_messages_trigram_update_new AFTER UPDATE OF content
       ON threadline_messages WHEN new.is_summary = 0 AND new.has_cjk = 1 BEGIN
         INSERT INTO threadline_messages_trigram(rowid, conv_key, content)
         VALUES (new.row_id, new.conv_key, new.content);
       END""",
]

_POSTGRES_FTS = [
    """ALTER TABLE threadline_messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
         CASE WHEN is_summary THEN NULL ELSE
           setweight(to_tsvector('english'::regconfig, content), 'A') ||
           setweight(to_tsvector('english'::regconfig, participant_name), 'B')
         END) STORED""",
    "CREATE INDEX ix_threadline_messages_search ON threadline_messages USING gin (search_vector)",
]


def upgrade() -> None:
    op.create_table(
        "threadline_messages",
        sa.Column("row_id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
                  autoincrement=True),
        sa.Column("id", sa.String(255), nullable=False, unique=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("conv_key", sa.String(32), nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=False),
        sa.Column("participant_kind", sa.String(16), nullable=False),
        sa.Column("participant_id", sa.String(255), nullable=False),
        sa.Column("participant_name", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("ts_us", sa.BigInteger, nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("channel_type", sa.String(64), nullable=False),
        sa.Column("channel_name", sa.Text),
        sa.Column("channel_id", sa.String(255)),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("message_id", sa.String(255)),
        sa.Column("mentions", sa.Text, nullable=False),
        sa.Column("is_summary", sa.Boolean, nullable=False),
        sa.Column("has_cjk", sa.Boolean, nullable=False),
        sa.Column("tool_json", sa.Text),
        sa.Column("extra_json", sa.Text),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.UniqueConstraint("conversation_id", "sequence", name="uq_threadline_messages_seq"),
        sa.UniqueConstraint("conversation_id", "message_id",
                            name="uq_threadline_messages_platform_id"),
    )
    op.create_index("ix_threadline_messages_summary", "threadline_messages",
                    ["conversation_id", "is_summary", "sequence"])
    op.create_table(
        "threadline_conversations",
        sa.Column("conversation_id", sa.String(512), primary_key=True),
        sa.Column("last_sequence", sa.BigInteger, nullable=False),
        sa.Column("message_count", sa.BigInteger, nullable=False),
        sa.Column("last_activity_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_conversations_activity", "threadline_conversations",
                    ["last_activity_us"])
    statements = _SQLITE_FTS if op.get_bind().dialect.name == "sqlite" else _POSTGRES_FTS
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops conversation history; restore a backup.")
