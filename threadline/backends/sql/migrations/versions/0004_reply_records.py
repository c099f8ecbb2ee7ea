"""Reply records: what each agent saw and did for every reply (the inspector's table).

One row per agent turn. The figures an overview or a chart needs are columns; the whole record
(prompt parts, each model call's exact request and response, tool exchanges) is one JSON
document in `detail_json`, read only when a single record is shown. Retention deletes by
`created_us`, listings read by conversation, newest first.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_reply_records",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("inbound_id", sa.String(255), nullable=False),
        sa.Column("outbound_id", sa.String(255)),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("addressed_because", sa.String(32)),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("stop_reason", sa.String(64), nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("model_calls", sa.Integer, nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("cache_read_tokens", sa.Integer, nullable=False),
        sa.Column("cache_write_tokens", sa.Integer, nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("token_budget", sa.Integer, nullable=False),
        sa.Column("reply", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("detail_json", sa.Text, nullable=False),
    )
    op.create_index("ix_threadline_reply_records_conversation", "threadline_reply_records",
                    ["conversation_id", "created_us"])
    op.create_index("ix_threadline_reply_records_created", "threadline_reply_records",
                    ["created_us"])


def downgrade() -> None:
    op.drop_table("threadline_reply_records")
