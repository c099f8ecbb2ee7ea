"""Person memory: what the person being answered said in other conversations this one may see.

A `PersonMemory` is made for one turn (by `threadline.people.memory.person_memory_for`) with the
index keys of that person and that conversation already fixed: the assembler's recall and the
`conversation_search` tool only hold it and ask it questions, so nothing a model writes can
widen it to another person or another workspace. Only the person's own turns come back, without
the turns around them (those are other people's words), each marked with where and when it was
said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from threadline.history.fusion import fuse_messages
from threadline.history.meaning import MeaningSearch
from threadline.history.model import StoredMessage
from threadline.history.platform_ids import platform_of
from threadline.history.projection import speaker_label, turn_text
from threadline.history.prompt import PromptMessage
from threadline.history.search import cap_by_tokens
from threadline.history.store import SpeakerSearchStore
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter

MAX_PERSON_HITS = 8


@dataclass(frozen=True, slots=True)
class PersonMemory:
    """One person's earlier words, as seen from the conversation `conversation_id`, said
    before `before` (the time of the turn being answered)."""

    store: SpeakerSearchStore
    person_name: str
    keys: frozenset[str]
    conversation_id: str
    before: datetime
    meaning: MeaningSearch | None = None

    async def search(self, query: str, *, limit: int = MAX_PERSON_HITS,
                     token_cap: int = 1000) -> list[StoredMessage]:
        """Their turns best matching `query` by words, fused with those nearest by meaning."""
        found = await self.store.search_speakers(
            self.keys, query, exclude_conversation=self.conversation_id, before=self.before,
            limit=limit, token_cap=token_cap)
        if self.meaning is not None:
            similar = await self.meaning.similar_for_speakers(
                self.keys, query, exclude_conversation=self.conversation_id,
                before=self.before, limit=limit)
            found = cap_by_tokens(fuse_messages(found, similar, fusion=self.meaning.fusion,
                                                 limit=limit), token_cap)
        return [m for m in found if not m.is_command]  # commands are never shown to a model

    @property
    def header(self) -> str:
        return (f"{self.person_name} said earlier, in other conversations (their own words, "
                "found by search):")


def where_said(message: StoredMessage) -> str:
    """Where a turn was said, for a reader: `slack #support`, `a direct message on telegram`."""
    platform = platform_of(message.conversation_id)
    if message.scope == "dm":
        return f"a direct message on {platform}"
    name = message.metadata.channel_name
    place = f"#{name.lstrip('#')}" if name else message.conversation_id
    return f"{platform} {place}" + (" (thread)" if message.scope == "thread" else "")


def format_said_elsewhere(hits: Sequence[StoredMessage]) -> str:
    """One line per turn, oldest first: when and where, who, what."""
    ordered = sorted(hits, key=lambda m: m.timestamp)
    return "\n".join(f"[{m.timestamp:%a %Y-%m-%d %H:%M}, {where_said(m)}] "
                     f"{turn_text(speaker_label(m), m.content)}" for m in ordered)


def person_block(
    memory: PersonMemory, hits: Sequence[StoredMessage], *, room: int, counter: TokenCounter,
) -> tuple[PromptMessage | None, list[str]]:
    """The system block of the best hits that fit `room` tokens, and their ids."""
    kept = list(hits)
    while kept:
        block = PromptMessage("system", f"{memory.header}\n{format_said_elsewhere(kept)}")
        if PER_MESSAGE_OVERHEAD + counter.count(block.content) <= room:
            return block, [m.id for m in kept]
        kept.pop()  # the worst-ranked hit goes first
    return None, []
