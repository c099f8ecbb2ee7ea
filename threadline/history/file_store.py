"""What keeps the bytes of turns' files: the backend part `files`, as the app uses it.

The bytes are kept once per sha256 by a backend (`threadline.backends.sql.files.SqlFileStore`
is the SQL one); a backend that keeps no files gives None and says so once at start. Code that
deletes turns (`people forget`, `/forget-me`, retention) hands their files to `forget_unused`,
which deletes the bytes no stored turn names any more.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

DEFAULT_INLINE_MAX_BYTES = 256 * 1024


class FileStore(Protocol):
    """Keeps and hands back file bytes by hash."""

    async def put(self, data: bytes, *, sha256: str, media_type: str) -> None:
        """Keep `data` under its hash (nothing happens when it is kept already)."""
        ...

    async def get(self, sha256: str) -> bytes | None:
        """The bytes kept under `sha256`, or None when they are not (forgotten, never kept)."""
        ...

    async def describe(self, sha256: str, text: str) -> None:
        """Keep the short description a model wrote of an image (written once, reused)."""
        ...

    async def descriptions(self, sha256s: Iterable[str]) -> dict[str, str]:
        """The descriptions kept for these files (files without one are left out)."""
        ...

    def limited(self, *, directory: str | Path | None,
                inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES) -> FileStore:
        """The same store, keeping files over `inline_max_bytes` in `directory`."""
        ...

    async def forget_unused(self, sha256s: Iterable[str]) -> int:
        """Delete the bytes of these files that no stored turn names any more; how many."""
        ...
