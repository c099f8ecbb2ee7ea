"""Scheduled turns and human handoffs (`threadline.schedules`, `threadline.handoff`).

`threadline_schedules`: one row per schedule, its next due time indexed among the active ones
(what every process's scheduler asks for). `threadline_handoffs`: one row per conversation
handed to people, with until when the bot stays quiet.

Revision ID: schedules_handoffs
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "schedules_handoffs"
down_revision = "0006"
branch_labels = None
depends_on = None

_ACTIVE = "state = 'active'"


def upgrade() -> None:
    op.create_table(
        "threadline_schedules",
        sa.Column("schedule_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(255), unique=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("channel", sa.String(255)),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("due_us", sa.BigInteger),
        sa.Column("cron", sa.String(255)),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_by_name", sa.String(255), nullable=False, server_default=""),
        sa.Column("origin_json", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("fired", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_schedules_due", "threadline_schedules", ["due_us"],
                    sqlite_where=sa.text(_ACTIVE), postgresql_where=sa.text(_ACTIVE))
    op.create_index("ix_threadline_schedules_conversation", "threadline_schedules",
                    ["conversation_id", "state"])
    op.create_table(
        "threadline_handoffs",
        sa.Column("conversation_id", sa.String(512), primary_key=True),
        sa.Column("customer_id", sa.String(255), nullable=False),
        sa.Column("customer_name", sa.String(255), nullable=False, server_default=""),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("started_us", sa.BigInteger, nullable=False),
        sa.Column("until_us", sa.BigInteger, nullable=False),
        sa.Column("ended_us", sa.BigInteger),
    )


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops what it keeps; restore a backup.")
