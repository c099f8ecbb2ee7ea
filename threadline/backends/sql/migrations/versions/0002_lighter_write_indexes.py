"""Fewer index writes per append: a partial summary index, no conversation activity index.

Every append wrote an entry into an index over all turns only to find the few summaries, and
moved its conversation in an activity index only `list_conversations` reads (it sorts the
conversations table instead). Each index is a page write per commit on SQLite.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_threadline_messages_summary", table_name="threadline_messages")
    op.create_index("ix_threadline_messages_summary", "threadline_messages",
                    ["conversation_id", "sequence"],
                    sqlite_where=sa.text("is_summary = true"),
                    postgresql_where=sa.text("is_summary = true"))
    op.drop_index("ix_threadline_conversations_activity",
                  table_name="threadline_conversations")


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops conversation history; restore a backup.")
