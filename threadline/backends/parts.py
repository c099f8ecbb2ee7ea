"""Which backend a history belongs to, for code that is handed only the history (a turn's
`context.store`, a CLI action): `parts_of(history).people`, `.records`, `.inbox`.

Imported by the domain modules whose parts the backends build, so it imports the backends
themselves only when asked.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from threadline.errors import ConfigError
from threadline.history.store import ConversationStore

if TYPE_CHECKING:
    from threadline.backends.base import Backend
    from threadline.inspector.records import ReplyRecords
    from threadline.people.directory import PeopleDirectory

_PARTS: weakref.WeakKeyDictionary[ConversationStore, Backend] = weakref.WeakKeyDictionary()


def remember(backend: Backend) -> Backend:
    """Record the backend that built a history (`build_backend` does)."""
    _PARTS[backend.history] = backend
    return backend


def parts_of(history: ConversationStore) -> Backend:
    """The backend a history belongs to: the one that built it, or (a history built directly,
    as tests and embedders do) the built-in backend whose history it is, or a backend of the
    history alone, which keeps nothing else."""
    found = _PARTS.get(history)
    if found is not None:
        return found
    from threadline.backends.base import Backend
    from threadline.backends.registry import built_in_plugs

    adopted = next((b for plug in built_in_plugs() if (b := plug.adopt(history))), None)
    if adopted is None:
        # A history of its own kind keeps only itself; turns it refuses wait on disk in the
        # working folder, as they would for any store.
        name = type(history).__name__
        adopted = Backend(name=name, history=history, outbox_path=Path.cwd() / (
            f"threadline-{name.lower()}.outbox.jsonl"))
    return remember(adopted)


def people_for(history: ConversationStore) -> PeopleDirectory:
    """The people directory kept beside a history; a `ConfigError` says when its backend keeps
    none (linking, export and forgetting a person need one)."""
    parts = parts_of(history)
    if parts.people is None:
        raise ConfigError(f"backend {parts.name} keeps no people directory: linking, export "
                          "and forgetting a person need a backend that does (sqlite or "
                          "postgresql)")
    return parts.people


def records_for(history: ConversationStore) -> ReplyRecords | None:
    """The reply records kept beside a history (None: its backend keeps none)."""
    return parts_of(history).records
