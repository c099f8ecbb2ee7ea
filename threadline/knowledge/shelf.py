"""Where a documents source keeps its sections: as the turns of its own conversation.

Recall is already a hybrid search that every backend keeps (an FTS5 or tsvector index over
each turn's words, a vector per turn made in the background, BM25 and the embedding model
fused, all scoped to one conversation). A source's sections are stored the same way, in the
history, as the turns of the conversation `knowledge:SOURCE`: SQLite, PostgreSQL and the memory
backend keep them with no table of their own, the vector indexer embeds them as it embeds
turns, and a search is recall's search scoped to that conversation, so an agent reaches only
the sources it was given (its tools hold their conversation ids, nothing from a chat names
one). A document's sections are appended together, so their sequence numbers follow the
document and a hit's neighbours are the sections around it.

A section turn is written by the system participant `knowledge:SOURCE` with the document's
title as its name, its text is the heading path then the section (`Section.searched_text`),
and `metadata.extra["knowledge"]` says which document (key, digest, link), which heading path
and which characters of it. Its id derives from the source, document, digest and part, so a
sync that is run twice stores a section once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.history.store import ConversationStore
from threadline.knowledge.documents import Document
from threadline.knowledge.sections import Section
from threadline.knowledge.source import FoundSection

PREFIX = "knowledge:"
CHANNEL_TYPE = "knowledge"
EXTRA_KEY = "knowledge"
# Every section of a source is read at once when a sync compares documents.
ALL_SECTIONS = 10_000_000


def source_conversation(source: str) -> str:
    """The conversation holding `source`'s sections."""
    return f"{PREFIX}{source}"


def section_turn(source: str, document: Document, section: Section, *, part: int,
                 timestamp: datetime) -> StoredMessage:
    """One section of `document` as the turn that keeps it."""
    turn_id = section_id(source, document.key, document.digest, part=part)
    conversation = source_conversation(source)
    return StoredMessage(
        id=turn_id, conversation_id=conversation,
        participant=Participant(kind="system", id=conversation,
                                display_name=document.title[:200] or document.key),
        content=section.searched_text, timestamp=timestamp,
        metadata=MessageMetadata(channel_type=CHANNEL_TYPE, message_id=turn_id, extra={
            EXTRA_KEY: {"document": document.key, "digest": document.digest,
                        "link": document.link, "title": document.title,
                        "headings": list(section.headings), "start": section.start,
                        "end": section.end, "part": part}}))


def section_id(source: str, document: str, digest: str, *, part: int) -> str:
    """The id of the turn keeping part `part` of a document (`document`: its key)."""
    key = f"{source}\x1f{document}\x1f{digest}\x1f{part}"
    return "kn-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def lead_id(turn: StoredMessage) -> str | None:
    """The id of the opening section of the document whose section `turn` keeps (None: the
    turn is not a section)."""
    place = section_document(turn)
    if place is None:
        return None
    document, digest, _ = place
    return section_id(turn.conversation_id[len(PREFIX):], document, digest, part=0)


def section_document(turn: StoredMessage) -> tuple[str, str, int] | None:
    """(document key, digest, part) of the section `turn` keeps (None: not a section)."""
    kept = turn.metadata.extra.get(EXTRA_KEY)
    if not isinstance(kept, dict) or not turn.conversation_id.startswith(PREFIX):
        return None
    return str(kept["document"]), str(kept["digest"]), int(kept.get("part", 0))


def found_section(turn: StoredMessage) -> FoundSection | None:
    """The section a stored turn keeps (None: the turn is not a section)."""
    kept = turn.metadata.extra.get(EXTRA_KEY)
    if not isinstance(kept, dict) or not turn.conversation_id.startswith(PREFIX):
        return None
    _, _, text = turn.content.partition("\n")
    return FoundSection(
        id=turn.id, source=turn.conversation_id[len(PREFIX):], document=str(kept["document"]),
        title=str(kept["title"]), headings=tuple(kept.get("headings") or ()), text=text,
        token_count=turn.token_count or 0, start=int(kept.get("start", 0)),
        end=int(kept.get("end", 0)), link=kept.get("link"))


@dataclass(slots=True)
class StoredDocument:
    """A document as a source holds it now: the digest it was read with, its sections' ids."""

    digest: str
    section_ids: list[str] = field(default_factory=list)


async def stored_documents(store: ConversationStore, source: str) -> dict[str, StoredDocument]:
    """Every document `source` holds, by key."""
    documents: dict[str, StoredDocument] = {}
    for turn in await store.get(source_conversation(source), limit=ALL_SECTIONS):
        kept = turn.metadata.extra.get(EXTRA_KEY)
        if not isinstance(kept, dict):
            continue
        held = documents.setdefault(str(kept["document"]), StoredDocument(str(kept["digest"])))
        if held.digest != kept["digest"]:  # a sync that stopped half-way: read it again
            held.digest = ""
        held.section_ids.append(turn.id)
    return documents


async def replace_sections(store: ConversationStore, source: str, *, remove: Iterable[str],
                           add: Sequence[StoredMessage]) -> None:
    """Remove a document's old sections and store its new ones (new first: a search in
    between finds one of the two versions, never neither)."""
    if add:
        await store.append_many(list(add))
    added = {turn.id for turn in add}
    old = [turn_id for turn_id in remove if turn_id not in added]
    if old:
        await store.delete_messages(source_conversation(source), old)
