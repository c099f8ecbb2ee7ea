"""What the platform said became of each posted reply (`threadline.inspector.delivery_status`).

`threadline_reply_records.delivery_status_json`: per platform message id, the furthest status
a platform reported (sent, delivered, read, failed with its error); NULL until one arrives.

Revision ID: reply_delivery_status
Revises: matrix_sync_positions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "reply_delivery_status"
down_revision = "matrix_sync_positions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("threadline_reply_records", sa.Column("delivery_status_json", sa.Text))


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops what it keeps; restore a backup.")
