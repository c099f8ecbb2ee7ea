"""A bounded in-memory store: for tests, demos and agents that need no persistence.

Least recently active conversations are evicted first and each conversation keeps its newest
`max_messages_per_conversation` turns. Nothing survives a restart; use `SqlConversationStore`
for memory that must.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Self

from threadline.errors import ConfigError, StoreError
from threadline.history.changes import (
    ChangeListener,
    HistoryChange,
    Subscribers,
    Unsubscribe,
    appended,
)
from threadline.history.fusion import FoundByMeaning, fuse_ranks
from threadline.history.inbox import MemoryInbox
from threadline.history.model import Scope, StoredMessage
from threadline.history.search import (
    ENGLISH_STOP_WORDS,
    IndexedTurn,
    SearchQuery,
    SearchScope,
    bm25_rank,
    cap_by_tokens,
    merge_windows,
)
from threadline.history.speakers import speaker_keys
from threadline.history.store import ConversationInfo, SearchWindow
from threadline.history.tokens import TokenCounter, message_tokens


@dataclass
class _Conversation:
    messages: list[StoredMessage] = field(default_factory=list)
    platform_ids: dict[str, str] = field(default_factory=dict)
    last_sequence: int = 0
    last_activity: datetime | None = None
    # Stemmed words per turn, made on first search and kept while the turn is unchanged.
    indexed: dict[str, IndexedTurn] = field(default_factory=dict)


class InMemoryConversationStore:
    """`ConversationStore` kept in process memory, bounded in conversations and turns.

    No lock is needed: no method awaits between reading and writing its state.
    """

    def __init__(
        self,
        max_conversations: int = 500,
        max_messages_per_conversation: int = 500,
        *,
        token_counter: TokenCounter | None = None,
        stop_words: frozenset[str] = ENGLISH_STOP_WORDS,
    ) -> None:
        if max_conversations < 1 or max_messages_per_conversation < 1:
            raise ConfigError("max_conversations and max_messages_per_conversation must be >= 1")
        self.max_conversations = max_conversations
        self.max_messages_per_conversation = max_messages_per_conversation
        self.inbox = MemoryInbox()
        self._changes = Subscribers()
        self._counter = token_counter
        self._stop_words = stop_words
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self._ids: dict[str, str] = {}
        self._closed = False

    @property
    def reads_on_the_loop(self) -> bool:
        """`LoopReadingStore`: every read is a walk of this process's memory."""
        return True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("this InMemoryConversationStore is closed; create a new one")

    async def append(self, message: StoredMessage) -> bool:
        return (await self.append_many([message]))[0]

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        self._check_open()
        stored = [self._append_one(m) for m in messages]
        if self._changes:
            self._changes.notify(appended(messages, stored))
        return stored

    def _append_one(self, message: StoredMessage) -> bool:
        if message.id in self._ids:
            return False
        conversation = self._conversations.get(message.conversation_id)
        platform_id = message.metadata.message_id
        if conversation and platform_id and platform_id in conversation.platform_ids:
            return False
        if conversation is None:
            conversation = self._conversations[message.conversation_id] = _Conversation()
            while len(self._conversations) > self.max_conversations:
                _, evicted = self._conversations.popitem(last=False)
                for old in evicted.messages:
                    self._ids.pop(old.id, None)
        self._conversations.move_to_end(message.conversation_id)
        conversation.last_sequence += 1
        stored = message.with_store_fields(
            sequence=conversation.last_sequence, token_count=message_tokens(message, self._counter)
        )
        conversation.messages.append(stored)
        conversation.last_activity = message.timestamp
        self._ids[stored.id] = stored.conversation_id
        if platform_id:
            conversation.platform_ids[platform_id] = stored.id
        overflow = len(conversation.messages) - self.max_messages_per_conversation
        if overflow > 0:
            for old in conversation.messages[:overflow]:
                self._ids.pop(old.id, None)
                if old.metadata.message_id:
                    conversation.platform_ids.pop(old.metadata.message_id, None)
            del conversation.messages[:overflow]
        return True

    def _turns(self, conversation_id: str) -> list[StoredMessage]:
        self._check_open()
        conversation = self._conversations.get(conversation_id)
        return conversation.messages if conversation else []

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
        wanted = set(participant_ids) if participant_ids is not None else None
        selected = [
            m for m in self._turns(conversation_id)
            if (include_summaries or not m.metadata.is_summary)
            and (scope is None or m.scope == scope)
            and (since is None or m.timestamp >= since)
            and (before is None or m.timestamp < before)
            and (after_sequence is None or (m.sequence or 0) > after_sequence)
            and (through_sequence is None or (m.sequence or 0) <= through_sequence)
            and (wanted is None or m.participant.id in wanted)
        ]
        if limit is not None:
            selected = selected[-limit:] if limit > 0 else []
        return selected

    async def get_by_ids(self, conversation_id: str, ids: Iterable[str]) -> list[StoredMessage]:
        wanted = set(ids)
        return [m for m in self._turns(conversation_id) if m.id in wanted]

    async def find_by_platform_id(
        self, conversation_id: str, platform_message_id: str
    ) -> StoredMessage | None:
        conversation = self._conversations.get(conversation_id)
        stored_id = conversation.platform_ids.get(platform_message_id) if conversation else None
        found = await self.get_by_ids(conversation_id, [stored_id]) if stored_id else []
        return found[0] if found else None

    def _searchable(self, conversation_id: str) -> list[IndexedTurn]:
        self._check_open()
        conversation = self._conversations.get(conversation_id)
        if conversation is None:
            return []
        previous = conversation.indexed
        current: dict[str, IndexedTurn] = {}
        for message in conversation.messages:
            if message.metadata.is_summary or not message.content:
                continue
            cached = previous.get(message.id)
            current[message.id] = (cached if cached is not None and cached.message is message
                                   else IndexedTurn.of(message))
        conversation.indexed = current
        return list(current.values())

    async def search(
        self, conversation_id: str, query: str, *, limit: int = 10, token_cap: int = 2000
    ) -> list[StoredMessage]:
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        hits = bm25_rank(parsed, self._searchable(conversation_id), limit=limit)
        return cap_by_tokens(hits, token_cap)

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
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        scope = SearchScope(frozenset(exclude_ids), through_sequence)
        turns = [t for t in self._searchable(conversation_id) if scope.allows(t.message)]
        by_sequence = {t.message.sequence or 0: t.message for t in turns}
        lexical = [m.sequence or 0 for m in bm25_rank(parsed, turns, limit=limit)]
        if similar is not None:  # turns the index knows but this search may not show
            similar = similar.shown(by_sequence.__contains__)
        ranked = fuse_ranks(lexical, similar, limit=limit)
        return merge_windows([by_sequence[s] for s in ranked], list(by_sequence.values()),
                             context=context, token_cap=token_cap)

    async def search_speakers(
        self, keys: Collection[str], query: str, *, exclude_conversation: str, before: datetime,
        limit: int = 5, token_cap: int = 1000,
    ) -> list[StoredMessage]:
        parsed = SearchQuery.parse(query, stop_words=self._stop_words)
        wanted = set(keys)
        turns = [turn for cid in list(self._conversations) if cid != exclude_conversation
                 for turn in self._searchable(cid)
                 if turn.message.timestamp < before
                 and wanted.intersection(speaker_keys(turn.message) or ())]
        return cap_by_tokens(bm25_rank(parsed, turns, limit=limit), token_cap)

    async def latest_summary(
        self, conversation_id: str, *, participant_id: str | None = None
    ) -> StoredMessage | None:
        summaries = [m for m in self._turns(conversation_id) if m.metadata.is_summary
                     and (participant_id is None or m.participant.id == participant_id)]
        return summaries[-1] if summaries else None

    async def edit_message(self, conversation_id: str, message_id: str, content: str) -> bool:
        turns = self._turns(conversation_id)
        for index, message in enumerate(turns):
            if message.id == message_id:
                edited = replace(message, content=content)
                turns[index] = replace(edited, token_count=message_tokens(edited, self._counter))
                self._changes.notify([HistoryChange("edit", conversation_id, (message_id,))])
                return True
        return False

    async def delete_messages(self, conversation_id: str, ids: Iterable[str]) -> int:
        conversation = self._conversations.get(conversation_id)
        self._check_open()
        if conversation is None:
            return 0
        doomed = set(ids)
        kept = [m for m in conversation.messages if m.id not in doomed]
        removed = [m for m in conversation.messages if m.id in doomed]
        conversation.messages[:] = kept
        for message in removed:
            self._ids.pop(message.id, None)
            if message.metadata.message_id:
                conversation.platform_ids.pop(message.metadata.message_id, None)
        if removed:
            self._changes.notify([HistoryChange("delete", conversation_id,
                                                tuple(m.id for m in removed))])
        return len(removed)

    def subscribe(self, callback: ChangeListener, conversation_id: str | None = None
                  ) -> Unsubscribe:
        """Heard after each append, edit or delete, in this process only (see `changes`)."""
        return self._changes.subscribe(callback, conversation_id)

    async def list_conversations(self, *, limit: int = 100) -> list[ConversationInfo]:
        self._check_open()
        infos = [
            ConversationInfo(cid, len(c.messages), c.last_activity, c.last_sequence)
            for cid, c in reversed(self._conversations.items())
            if c.last_activity is not None
        ]
        return infos[:limit]

    def conversation_of(self, message_id: str) -> str | None:
        """The conversation a stored turn is in, or None when it is not (or no longer) kept."""
        return self._ids.get(message_id)

    async def count(self, conversation_id: str | None = None) -> int:
        self._check_open()
        if conversation_id is not None:
            return len(self._turns(conversation_id))
        return sum(len(c.messages) for c in self._conversations.values())

    async def close(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
