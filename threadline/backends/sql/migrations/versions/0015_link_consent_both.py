"""Links need both people's yes: a link request says whose answer it waits for.

The person who said a code is asked first, then the code's owner
(`threadline.people.link_requests`); `awaiting` is the identity asked now. A request opened
before this revision was waiting for its owner.

Revision ID: link_consent_both
Revises: turn_vectors
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "link_consent_both"
down_revision = "turn_vectors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("threadline_link_requests", sa.Column("awaiting", sa.String(512)))
    op.execute("UPDATE threadline_link_requests SET awaiting = issuer")


def downgrade() -> None:
    with op.batch_alter_table("threadline_link_requests") as table:
        table.drop_column("awaiting")
