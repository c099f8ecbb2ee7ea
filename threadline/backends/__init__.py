"""Where conversations and everything beside them are kept: a backend chosen by the store URL.

    async with open_backend("sqlite:///bot.db") as backend:
        backend.history        # the ConversationStore every agent shares
        backend.people         # None when the backend keeps no people directory

`sql` (SQLite, PostgreSQL) and `memory` are built in; others register through the
`threadline.backends` entry point group (`threadline.backends.registry`). All SQL lives under
`threadline/backends/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The in-memory backend's adopter: an `InMemoryConversationStore` built directly (a test, a
# library user) finds its parts (vectors, people, ...) wherever it is asked from. The SQL
# backend's registers itself when its store's module is imported, which making one needs.
from threadline.backends import memory as _memory  # noqa: F401
from threadline.plugs import lazy_exports

if TYPE_CHECKING:
    from threadline.backends.base import Backend, BackendOptions, BackendPlug
    from threadline.backends.parts import parts_of
    from threadline.backends.registry import backend_schemes


def build_backend(url: str, options: BackendOptions | None = None) -> Backend:
    """The backend a store URL names, built but not opened (`async with` opens it)."""
    from threadline.backends.base import BackendOptions
    from threadline.backends.parts import remember
    from threadline.backends.registry import backend_for

    return remember(backend_for(url).build(url, options or BackendOptions()))


def open_backend(url: str, options: BackendOptions | None = None) -> Backend:
    """`build_backend`, for `async with open_backend(url) as backend:`."""
    return build_backend(url, options)


__all__ = ["Backend", "BackendOptions", "BackendPlug", "backend_schemes", "build_backend",
           "open_backend", "parts_of"]

__getattr__ = lazy_exports(__name__, {
    "Backend": "threadline.backends.base",
    "BackendOptions": "threadline.backends.base",
    "BackendPlug": "threadline.backends.base",
    "parts_of": "threadline.backends.parts",
    "backend_schemes": "threadline.backends.registry",
})
