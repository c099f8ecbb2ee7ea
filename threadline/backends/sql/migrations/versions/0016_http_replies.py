"""Replies of the `http` platform kept until the caller has them (`threadline.backends.sql.
http_replies`).

`threadline_http_replies`: one row per reply; `seq` is its place in the channel's order (the
cursor a fetch reads after), `due_us` when it may next be posted to the callback (pushed forward
while one replica posts it, and after each failed attempt), `delivered_us` once the callback
took it; `turn_id` is the stored turn answered, by which forgetting a person deletes the
replies to their words.

Revision ID: http_replies
Revises: link_consent_both
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "http_replies"
down_revision = "link_consent_both"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_http_replies",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"),
                  primary_key=True, autoincrement=True),
        sa.Column("reply_id", sa.String(255), nullable=False, unique=True),
        sa.Column("channel", sa.String(255), nullable=False),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("in_reply_to", sa.String(255), nullable=False),
        sa.Column("turn_id", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(255)),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("due_us", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("delivered_us", sa.BigInteger),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_threadline_http_replies_due", "threadline_http_replies",
                    ["channel", "delivered_us", "due_us"])
    op.create_index("ix_threadline_http_replies_turn", "threadline_http_replies", ["turn_id"])


def downgrade() -> None:
    op.drop_table("threadline_http_replies")
