"""Matrix accounts' sync positions (`threadline.backends.sql.matrix_sync`).

`threadline_matrix_sync`: one row per Matrix account (its user id), the `next_batch` it took
last; a restarted bot syncs from there, so it misses nothing and takes nothing twice.

Revision ID: matrix_sync_positions
Revises: inbox_bursts
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "matrix_sync_positions"
down_revision = "inbox_bursts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_matrix_sync",
        sa.Column("account", sa.String(512), primary_key=True),
        sa.Column("next_batch", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("threadline_matrix_sync")
