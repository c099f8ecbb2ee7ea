"""Bursts: an inbox turn says which burst claimed it (`threadline.bursts`).

Several turns of one person answered by one reply are claimed together, in the database, so a
process that dies while answering them and the process that takes them next agree on which
turns the reply answers. A turn recorded before this revision belongs to no burst.

Revision ID: inbox_bursts
Revises: reply_feedback
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "inbox_bursts"
down_revision = "reply_feedback"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("threadline_inbox", sa.Column("burst_id", sa.String(255)))


def downgrade() -> None:
    with op.batch_alter_table("threadline_inbox") as table:
        table.drop_column("burst_id")
