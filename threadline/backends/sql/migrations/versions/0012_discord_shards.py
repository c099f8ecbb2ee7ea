"""Gateway shards shared by replicas (`threadline.backends.sql.shard_leases`).

`threadline_shard_leases`: one row per bot and shard, the replica holding it and until when (the
database's clock, in microseconds); `generation` counts the claims. `threadline_shard_replicas`:
the replicas alive for a bot, which the fair share is computed over.

Revision ID: discord_shards
Revises: slack_installations
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "discord_shards"
down_revision = "slack_installations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threadline_shard_leases",
        sa.Column("bot", sa.String(128), primary_key=True),
        sa.Column("shard_id", sa.Integer, primary_key=True),
        sa.Column("shard_count", sa.Integer, nullable=False),
        sa.Column("holder", sa.String(128)),
        sa.Column("lease_until_us", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "threadline_shard_replicas",
        sa.Column("bot", sa.String(128), primary_key=True),
        sa.Column("replica", sa.String(128), primary_key=True),
        sa.Column("alive_until_us", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("threadline_shard_replicas")
    op.drop_table("threadline_shard_leases")
