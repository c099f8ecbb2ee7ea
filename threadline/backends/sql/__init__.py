"""The SQL backend: SQLite (embedded default) and PostgreSQL (several processes)."""

from threadline.backends.sql.store import SqlConversationStore

__all__ = ["SqlConversationStore"]
