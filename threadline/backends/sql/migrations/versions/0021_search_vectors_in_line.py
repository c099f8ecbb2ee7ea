"""PostgreSQL keeps a turn's tsvector in its row (`search_vector` storage MAIN).

A long conversation's search (a knowledge source's 100,000 sections) reads the tsvector of
every matched turn to rank it, up to LONG_RANKED of them. Stored EXTENDED (the default), a
section's tsvector (about 700 bytes, which pglz does not shrink) was moved out of line in 45% of
the rows, and each of those cost a TOAST index lookup and a read (about 15 us) in every ranking.
MAIN moves the compressible text out of line first and keeps the tsvector in the row. Rows
written before keep their layout until written again (a sync rewrites a changed document's
sections; an UPDATE of other columns does not move them): nothing is rewritten here, so the
upgrade is instant on any table. `VACUUM FULL threadline_messages` moves them all (measured),
locking the table while it runs. SQLite has no such storage: nothing changes there.

Revision ID: search_vectors_in_line
Revises: reply_delivery_status
"""

from __future__ import annotations

from alembic import op

revision = "search_vectors_in_line"
down_revision = "reply_delivery_status"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE threadline_messages ALTER COLUMN search_vector SET STORAGE MAIN")


def downgrade() -> None:
    raise NotImplementedError("Threadline never drops what it keeps; restore a backup.")
