"""Votes on replies (`threadline.feedback`): one row per reply and voter.

`threadline_reply_feedback`: keyed by (reply_id, voter), so a second press replaces the first;
indexed by the time of voting (the console's listings and satisfaction over time) and by the
voter (export and forget a person).

Revision ID: reply_feedback
Revises: http_replies
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "reply_feedback"
down_revision = "http_replies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_reply_feedback",
        sa.Column("reply_id", sa.String(255), primary_key=True),
        sa.Column("voter", sa.String(512), primary_key=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("vote", sa.String(8), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("voted_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_reply_feedback_voted", "threadline_reply_feedback",
                    ["voted_us"])
    op.create_index("ix_threadline_reply_feedback_voter", "threadline_reply_feedback", ["voter"])


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops what it keeps; restore a backup.")
