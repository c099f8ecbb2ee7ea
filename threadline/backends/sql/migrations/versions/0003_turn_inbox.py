"""The turn inbox and the reply ledger: who still has to be answered, what was posted.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_OPEN = "state IN ('received', 'answering')"


def upgrade() -> None:
    op.create_table(
        "threadline_inbox",
        sa.Column("row_id", sa.BigInteger().with_variant(sa.Integer, "sqlite"),
                  primary_key=True, autoincrement=True),
        sa.Column("turn_id", sa.String(255), nullable=False, unique=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("channel", sa.String(255)),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error", sa.Text),
        sa.Column("message_json", sa.Text),
        sa.Column("received_us", sa.BigInteger, nullable=False),
        sa.Column("updated_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_inbox_open", "threadline_inbox",
                    ["conversation_id", "row_id"], sqlite_where=sa.text(_OPEN),
                    postgresql_where=sa.text(_OPEN))
    op.create_table(
        "threadline_deliveries",
        sa.Column("delivery_key", sa.String(600), primary_key=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("message_json", sa.Text, nullable=False),
        sa.Column("platform_ids", sa.Text),
        sa.Column("updated_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops conversation history; restore a backup.")
