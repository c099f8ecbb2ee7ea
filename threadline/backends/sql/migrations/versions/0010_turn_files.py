"""Files sent with turns (`threadline.backends.sql.files`): one row per distinct file.

The row's key is the file's sha256, so the same picture sent twice is kept once. Small files'
bytes are in `data`; larger ones are in the directory the config names, `path` relative to it.

Revision ID: turn_files
Revises: link_consent
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "turn_files"
down_revision = "tool_approvals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_files",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("media_type", sa.String(128), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary),
        sa.Column("path", sa.String(255)),
        sa.Column("description", sa.Text),
    )


def downgrade() -> None:
    op.drop_table("threadline_files")
