"""Change notifications of a history: code subscribes to one conversation or all, and is called
after each committed append, edit or delete.

    unsubscribe = store.subscribe(lambda change: print(change.kind, change.message_ids),
                                  conversation_id="slack:T1:C1")
    ...
    unsubscribe()                     # heard nothing more

A callback runs on the event loop, must not block, and must not raise (an error it raises is
logged and dropped: one listener cannot silence the others or the write). Where a change is
heard depends on the backend: the memory backend and SQLite notify within this process only;
PostgreSQL notifies every process on the database (LISTEN/NOTIFY).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import structlog

from threadline.history.model import StoredMessage

log = structlog.get_logger("threadline.history.changes")

ChangeKind = Literal["append", "edit", "delete"]


@dataclass(frozen=True, slots=True)
class HistoryChange:
    """What changed in one conversation: the turns appended, edited or deleted, by id."""

    kind: ChangeKind
    conversation_id: str
    message_ids: tuple[str, ...]


ChangeListener = Callable[[HistoryChange], None]
Unsubscribe = Callable[[], None]


def appended(messages: Sequence[StoredMessage], stored: Sequence[bool]) -> list[HistoryChange]:
    """One change per conversation for the turns that went in (duplicates are no change)."""
    by_conversation: dict[str, list[str]] = {}
    for message, went_in in zip(messages, stored, strict=True):
        if went_in:
            by_conversation.setdefault(message.conversation_id, []).append(message.id)
    return [HistoryChange("append", cid, tuple(ids)) for cid, ids in by_conversation.items()]


class Subscribers:
    """The listeners of one history, each for one conversation or (None) for all."""

    def __init__(self) -> None:
        self._listeners: dict[int, tuple[ChangeListener, str | None]] = {}
        self._next = 0

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def subscribe(self, callback: ChangeListener, conversation_id: str | None = None
                  ) -> Unsubscribe:
        key = self._next
        self._next += 1
        self._listeners[key] = (callback, conversation_id)

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    def notify(self, changes: Sequence[HistoryChange]) -> None:
        for change in changes:
            for callback, wanted in list(self._listeners.values()):
                if wanted is not None and wanted != change.conversation_id:
                    continue
                try:
                    callback(change)
                except Exception:
                    log.exception("history.listener_failed",
                                  conversation_id=change.conversation_id, kind=change.kind)
