"""Matrix accounts' sync positions in the history's database (migration `matrix_sync_positions`).

One row per account; keeping a position is one upsert in the store's own transaction path, so
a position is durable when `keep` returns, and two replicas on one PostgreSQL read the same
one. Positions are opaque to us: the homeserver's `next_batch`, stored as given.
"""

from __future__ import annotations

from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.store import SqlConversationStore


def _position(conn: SqlRunner, account: str) -> str | None:
    rows = conn.rows("SELECT next_batch FROM threadline_matrix_sync WHERE account = :account",
                     {"account": account})
    return str(rows[0][0]) if rows else None


def _keep(conn: SqlRunner, account: str, next_batch: str) -> None:
    conn.rowcount("INSERT INTO threadline_matrix_sync (account, next_batch) "
                  "VALUES (:account, :next_batch) ON CONFLICT (account) "
                  "DO UPDATE SET next_batch = :next_batch",
                  {"account": account, "next_batch": next_batch})


class SqlMatrixSyncPositions:
    """`threadline.channels.matrix.sync_tokens.SyncTokens` over the store's database."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    async def position(self, account: str) -> str | None:
        return await self.store.run("read a Matrix sync position", _position, account)

    async def keep(self, account: str, next_batch: str) -> None:
        await self.store.run("keep a Matrix sync position", _keep, account, next_batch,
                             write=True)
