"""The `ConversationStore` protocol: what every store must do, and what it need not.

A store keeps every turn of every conversation, shared by every agent in it. It must:
- append idempotently: the same `id`, or the same (conversation, platform `message_id`), is
  stored once, and `append` returns False for the duplicate;
- order each conversation by a per-conversation sequence allocated inside the write, never by
  a clock (two turns with the same timestamp keep their order of arrival);
- search inside one conversation only, without letting query text act as query syntax;
- count each turn's tokens once, at append, and return the count with the turn.

A store need not: keep summaries in `get` results (they come back only when asked for), keep a
dense sequence (duplicates and deletions leave gaps; sequences only ever increase), or be
shared between processes (only the SQL store is).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from threadline.history.changes import ChangeListener, Unsubscribe
from threadline.history.fusion import FoundByMeaning
from threadline.history.model import Scope, StoredMessage


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """One conversation as an operator sees it in a listing."""

    conversation_id: str
    message_count: int
    last_activity: datetime
    last_sequence: int


@dataclass(frozen=True, slots=True)
class SearchWindow:
    """A run of consecutive turns around one or more search hits, in conversation order.

    `hit_ids` are the hits among `messages`, best ranked first.
    """

    hit_ids: tuple[str, ...]
    messages: tuple[StoredMessage, ...]

    @property
    def token_count(self) -> int:
        return sum(m.token_count or 0 for m in self.messages)


@runtime_checkable
class ConversationStore(Protocol):
    """Async storage of conversation turns; see the module docstring for the contract."""

    async def append(self, message: StoredMessage) -> bool:
        """Store one turn; True if stored, False if it was a duplicate delivery."""
        ...

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        """Store several turns in one transaction, in order; one flag per turn as `append`."""
        ...

    async def get(
        self,
        conversation_id: str,
        *,
        scope: Scope | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
        limit: int | None = None,
        participant_ids: Iterable[str] | None = None,
        after_sequence: int | None = None,
        through_sequence: int | None = None,
        include_summaries: bool = False,
    ) -> list[StoredMessage]:
        """Turns oldest first; with `limit`, the most recent `limit` of them.

        `after_sequence` and `through_sequence` bound the sequences read (exclusive and
        inclusive): the turns up to one being answered, say, without those stored after it.
        """
        ...

    async def get_by_ids(self, conversation_id: str, ids: Iterable[str]) -> list[StoredMessage]:
        """The turns with these ids inside this conversation, in conversation order."""
        ...

    async def find_by_platform_id(
        self, conversation_id: str, platform_message_id: str
    ) -> StoredMessage | None:
        """The turn of this conversation the platform knows by this id, if it is stored."""
        ...

    async def search(
        self, conversation_id: str, query: str, *, limit: int = 10, token_cap: int = 2000
    ) -> list[StoredMessage]:
        """Best-ranked turns of one conversation for a question or keywords, capped by tokens."""
        ...

    async def search_context(
        self,
        conversation_id: str,
        query: str,
        *,
        limit: int = 5,
        context: int | tuple[int, int] = 1,
        token_cap: int = 2000,
        exclude_ids: Collection[str] = (),
        through_sequence: int | None = None,
        similar: FoundByMeaning | None = None,
    ) -> list[SearchWindow]:
        """Search hits with neighbouring turns, overlaps merged, best window first.

        `context` is the turns shown each side of a hit, or (before, after). Turns in
        `exclude_ids` (those a prompt already holds) and turns after `through_sequence` are
        neither hits nor neighbours: the search ranks the others, it does not filter its top.
        `similar` are the turns found by meaning, best first, fused with the lexical ranking
        (`threadline.history.fusion`); the caller found them in this conversation.
        """
        ...

    async def latest_summary(
        self, conversation_id: str, *, participant_id: str | None = None
    ) -> StoredMessage | None:
        """The newest stored rolling summary of this conversation (by that writer), if any."""
        ...

    async def edit_message(self, conversation_id: str, message_id: str, content: str) -> bool:
        """Replace a turn's text (a platform edit); True if the turn exists here."""
        ...

    async def delete_messages(self, conversation_id: str, ids: Iterable[str]) -> int:
        """Delete turns by id inside this conversation only; returns how many went."""
        ...

    async def list_conversations(self, *, limit: int = 100) -> list[ConversationInfo]:
        """Conversations, most recently active first."""
        ...

    def subscribe(self, callback: ChangeListener, conversation_id: str | None = None
                  ) -> Unsubscribe:
        """Call `callback` after each committed append, edit or delete (of one conversation,
        or of all); returns the function that stops it (`threadline.history.changes`)."""
        ...

    async def count(self, conversation_id: str | None = None) -> int:
        """Number of stored turns (summaries included), in one conversation or in all."""
        ...

    async def close(self) -> None:
        """Release connections and threads; the store is unusable afterwards."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class SpeakerSearchStore(Protocol):
    """A store that can also search one person's turns across conversations (person memory).

    Optional: a store without it simply gives agents no person memory. `keys` come from
    `threadline.history.speakers`, derived by the caller, never from model input.
    """

    async def search_speakers(
        self, keys: Collection[str], query: str, *, exclude_conversation: str, before: datetime,
        limit: int = 5, token_cap: int = 1000,
    ) -> list[StoredMessage]:
        """Best-ranked turns carrying one of `keys`, outside `exclude_conversation`, said
        before `before`."""
        ...


@runtime_checkable
class LoopReadingStore(Protocol):
    """A store that answers a short read on the event loop itself, without waiting on a
    server or a thread (SQLite's loop connection, the memory store).

    Optional. Two such reads at once take as long as one after the other, so the assembler
    reads a turn's history first and searches for recall only when the prompt leaves
    something to recall (`history.assembler`); a store that waits on a server is asked for
    both at once instead, one round trip rather than two.
    """

    @property
    def reads_on_the_loop(self) -> bool:
        """Whether this store's short reads run on the event loop."""
        ...


@runtime_checkable
class SearchIndexMerging(Protocol):
    """A store whose word index keeps a bulk load's writes apart until they are merged, and
    can merge them now.

    Optional: a store without it is searched as it is. A knowledge sync that wrote many
    sections asks for it, so its searches do not walk the load's pieces one by one until the
    database gets round to merging them (`threadline.knowledge.sync`).
    """

    async def merge_search_index(self) -> None:
        """Merge the word index's separately kept writes (for example FTS5's segments, or a
        PostgreSQL GIN index's pending list)."""
        ...
