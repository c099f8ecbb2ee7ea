"""Alembic environment: migrations always run on a connection handed over by the store."""

from __future__ import annotations

from alembic import context

from threadline.backends.sql.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  version_table="threadline_alembic_version", render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
