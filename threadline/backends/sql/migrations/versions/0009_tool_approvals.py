"""Tool calls waiting for a person's approval (`threadline.agents.approvals`).

`threadline_tool_approvals`: one row per call that needs approval, keyed by the turn, the tool
and its input, so a turn taken again after a crash finds its own call. The state moves
pending -> approved -> running -> ran, or pending -> denied / expired, each step a guarded
update, so the tool runs at most once.

Revision ID: tool_approvals
Revises: link_consent
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "tool_approvals"
down_revision = "link_consent"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_tool_approvals",
        sa.Column("approval_id", sa.String(64), primary_key=True),
        sa.Column("conversation_id", sa.String(512), nullable=False),
        sa.Column("turn_id", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("tool", sa.String(64), nullable=False),
        sa.Column("input_json", sa.Text, nullable=False),
        sa.Column("approvers_json", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("decided_by", sa.String(255)),
        sa.Column("result", sa.Text),
        sa.Column("is_error", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("posted", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_us", sa.BigInteger, nullable=False),
        sa.Column("expires_us", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_threadline_tool_approvals_conversation", "threadline_tool_approvals",
                    ["conversation_id", "state"])


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops what it keeps; restore a backup.")
