"""Model spend per day: tokens and estimated cost per agent, conversation and person.

One row per (day, scope, subject), shared by every process on the database, so a daily budget
holds across replicas (`threadline.spend.ledger`). `reserved_tokens` are held by turns in
flight and given back when they finish.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_spend",
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("subject", sa.String(512), nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cache_read_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cache_write_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("reserved_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("cost", sa.Float, nullable=False, server_default="0"),
        sa.Column("turns", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("day", "scope", "subject", name="pk_threadline_spend"),
    )


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops recorded spend; restore a backup.")
