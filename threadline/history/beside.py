"""What a backend keeps beside a history, for code that is handed only the history.

A backend records the parts it built around a history (`keep_beside`), and how it recognises a
history of its own built directly, without it (`add_adopter`: tests and embedders build an
`SqlConversationStore` themselves). Code below the backends (a turn's recording step, link
codes, person memory, a person's erasure) asks `parts_beside(history)`; it names no backend,
and what a backend does not keep reads as None. A history nobody adopts keeps nothing beside it
but an outbox file in the working folder, named after its class.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from threadline.history.store import ConversationStore


class Beside(Protocol):
    """The parts as this layer reads them (`threadline.backends.Backend` has them typed)."""

    @property
    def name(self) -> str: ...

    @property
    def people(self) -> Any: ...

    @property
    def speakers(self) -> Any: ...

    @property
    def link_requests(self) -> Any: ...

    @property
    def outbox_path(self) -> Path | None: ...

    @property
    def files(self) -> Any: ...

    @property
    def vectors(self) -> Any: ...

    @property
    def feedback(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Alone:
    """A history no backend knows: nothing beside it but an outbox file."""

    name: str
    outbox_path: Path | None
    people: Any = None
    speakers: Any = None
    link_requests: Any = None
    files: Any = None
    vectors: Any = None
    feedback: Any = None


Adopter = Callable[[ConversationStore], Beside | None]
_KEPT: weakref.WeakKeyDictionary[ConversationStore, Beside] = weakref.WeakKeyDictionary()
_ADOPTERS: list[Adopter] = []


def keep_beside(history: ConversationStore, parts: Beside) -> None:
    """Record the parts a backend built around `history`."""
    _KEPT[history] = parts


def add_adopter(adopt: Adopter) -> None:
    """Let a backend give the parts around a history of its own that it did not build."""
    if adopt not in _ADOPTERS:
        _ADOPTERS.append(adopt)


def parts_beside(history: ConversationStore) -> Beside:
    """The parts kept beside `history` (adopted on first ask; see the module docstring)."""
    found = _KEPT.get(history)
    if found is None:
        found = next((p for adopt in _ADOPTERS if (p := adopt(history)) is not None), None)
        if found is None:
            name = type(history).__name__
            found = Alone(name, Path.cwd() / f"threadline-{name.lower()}.outbox.jsonl")
        _KEPT[history] = found
    return found
