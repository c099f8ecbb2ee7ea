"""Links need both people: pending link requests, wrong-code counts, where a code was given.

`threadline_link_requests` holds a redeemed code's request until the code's owner agrees or
refuses (or it expires with the code); `threadline_link_guesses` counts wrong codes per
identity in a window (`threadline.people.link_requests`). A code now keeps where it was given
(`origin`), so its owner can be asked there.

Revision ID: link_consent
Revises: schedules_handoffs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "link_consent"
down_revision = "schedules_handoffs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("threadline_link_codes", sa.Column("origin", sa.Text))
    op.create_table(
        "threadline_link_requests",
        sa.Column("request_id", sa.String(32), primary_key=True),
        sa.Column("issuer", sa.String(512), nullable=False),
        sa.Column("redeemer", sa.String(512), nullable=False),
        sa.Column("issuer_origin", sa.Text),
        sa.Column("redeemer_origin", sa.Text),
        sa.Column("expires_us", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "threadline_link_guesses",
        sa.Column("identity", sa.String(512), primary_key=True),
        sa.Column("window_start_us", sa.BigInteger, nullable=False),
        sa.Column("wrong", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("threadline_link_guesses")
    op.drop_table("threadline_link_requests")
    with op.batch_alter_table("threadline_link_codes") as table:
        table.drop_column("origin")
