"""Where a Matrix account's sync position is kept between runs: by the backend.

`/sync` answers with `next_batch`, the position to ask from next time. Kept by the backend
(SQLite, PostgreSQL: `threadline.backends.sql.matrix_sync`), it lets a restarted bot ask for
exactly what it has not taken yet: nothing missed while it was stopped, nothing handed over
twice. The channel stores a position only once every event before it was recorded in the inbox
(see `matrix.sync`). A backend that keeps no position (the memory backend) gets
`PositionInMemory`: a restart then begins at the server's present, and what was said while the
bot was stopped is not answered (`check` says so).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class SyncTokens(Protocol):
    """The last sync position each Matrix account took, by its user id."""

    async def position(self, account: str) -> str | None:
        """The `next_batch` taken last for `account`, or None before its first sync."""
        ...

    async def keep(self, account: str, next_batch: str) -> None:
        """Remember `next_batch` as taken for `account` (every event before it is recorded)."""
        ...


class PositionInMemory:
    """`SyncTokens` for this process only (a backend that keeps none)."""

    def __init__(self) -> None:
        self._positions: dict[str, str] = {}

    async def position(self, account: str) -> str | None:
        return self._positions.get(account)

    async def keep(self, account: str, next_batch: str) -> None:
        self._positions[account] = next_batch
