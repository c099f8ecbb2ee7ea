"""The trace id of each reply record (`threadline.tracing`), so the console links a reply to
its trace in the operator's tracing tool; null for records made with tracing off.

Revision ID: reply_trace_ids
Revises: discord_shards
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "reply_trace_ids"
down_revision = "discord_shards"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threadline_reply_records") as table:
        table.add_column(sa.Column("trace_id", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("threadline_reply_records") as table:
        table.drop_column("trace_id")
