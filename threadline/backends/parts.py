"""Which backend a history belongs to, for code above the backends that is handed only the
history (a CLI action, a test): `parts_of(history).people`, `.records`, `.inbox`.

The record itself lives at the history's layer (`threadline.history.beside`), where the code
below the backends reads it; here it is read typed.
"""

from __future__ import annotations

from threadline.backends.base import Backend
from threadline.history.beside import keep_beside, parts_beside
from threadline.history.store import ConversationStore
from threadline.inspector.records import ReplyRecords
from threadline.people.directory import people_for


def remember(backend: Backend) -> Backend:
    """Record the backend that built a history (`build_backend` does)."""
    keep_beside(backend.history, backend)
    return backend


def parts_of(history: ConversationStore) -> Backend:
    """The backend a history belongs to: the one that built it, the built-in backend whose
    history it is, or a backend of the history alone, which keeps nothing else."""
    found = parts_beside(history)
    if isinstance(found, Backend):
        return found
    return remember(Backend(name=found.name, history=history, outbox_path=found.outbox_path))


def records_for(history: ConversationStore) -> ReplyRecords | None:
    """The reply records kept beside a history (None: its backend keeps none)."""
    return parts_of(history).records


__all__ = ["parts_of", "people_for", "records_for", "remember"]
