"""A big knowledge source's words kept in this process, built off the turn's path and built again
when a sync changes the source.

A source's sections change only when it is synced, so a source of KEPT_SECTIONS sections or
more (the size from which its vectors are grouped, `threadline.history.clusters`: kb-dev's 702
sections and everyday conversations keep the store's own search) has its words kept as a
`WordIndex` (`threadline.history.word_index`), with each section's document and each
document's opening section (`KeptSource`: a search ranks sections with their pages counted
before it reads any), read through the store's own API, so every backend has it. A search
never waits for it: the first search of a source starts a look at it in the background and is
answered by the store's search, as every search is until the index is built. Building runs in
a thread, a part of READ_SEQUENCES at a time: at 100,000 sections and load 9 the loop was late
p50 2.9 ms, p99 32 ms while the words were counted in a thread, against p50 13 ms, p99 63 ms
counted on the loop 50 sections at a time (its ticks wait behind each part).

Staleness: a sync (in this process, or in another: `threadline knowledge sync` runs beside the
bot) appends new sections and deletes replaced ones. Whether the source changed is told by its
number of turns and its newest sequence (two small statements, read at most once every
CHECK_SECONDS, in the background), and sooner by the store's change notifications (this process
on SQLite and in memory, every process on PostgreSQL); a change builds the index again in the
background while the old one answers. The old one may rank a section deleted meanwhile: only
the sections found are read, and one that is gone is not shown. A section added meanwhile is
found by meaning, or once the index is built again.

Kept for the most recently searched sources up to MAX_BYTES together, least recently used
dropped first; one source's index never answers another's (each is its own conversation).
Without numpy (the embeddings extra) nothing is kept: `kept_words` is None.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from threadline.history.changes import HistoryChange
from threadline.history.clusters import CLUSTERED_ROWS
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.history.vectors import vectors_supported
from threadline.knowledge.shelf import section_document

if TYPE_CHECKING:
    from threadline.history.word_index import WordIndex, WordIndexBuilder

log = structlog.get_logger("threadline.knowledge")

# Sections from which a source's words are kept (the threshold of grouping its vectors).
KEPT_SECTIONS = CLUSTERED_ROWS
# Seconds between two looks at a kept source's size and newest sequence (a change this
# process hears of is looked at by the next search).
CHECK_SECONDS = 10.0
# Bytes of kept indexes at most: a source of 100,000 generated sections (kb-dev's pages,
# shuffled: 15,211 stems, 4.5 million postings) takes about 40 MB, 36 MB of it the postings
# (int32 section, float32 score; float16 scores would save 9 MB and change the order of
# sections whose scores differ by less than a thousandth).
MAX_BYTES = 256 * 1024 * 1024
# Sequences read by one statement while building: a read of the store's rows is decoded where
# the store decodes (on PostgreSQL, on the event loop), so a part of few rows stalls it little.
READ_SEQUENCES = 500
# A long build logs how far it has read every this many sequences.
PROGRESS_SEQUENCES = 20_000


@dataclass(frozen=True, slots=True)
class KeptSource:
    """A source's kept words, and the document of each section they hold: a search ranks the
    sections by their documents before it reads any (`threadline.knowledge.retrieval`)."""

    words: WordIndex
    # Each row's (section's) document: its place in `documents`.
    document_of_row: array[int]
    # Each document's key, and the sequence of its opening section (None: not kept).
    documents: list[tuple[str, int | None]]
    size: int

    def documents_at(self, sequences: Collection[int]) -> dict[int, tuple[str, int | None]]:
        """(document key, its opening section's sequence) of the sections at these
        sequences that are kept here, by sequence."""
        return {sequence: self.documents[self.document_of_row[row]]
                for sequence, row in self.words.rows_at(sequences).items()}


@dataclass(slots=True)
class _Kept:
    """One source's kept index, what it was built from, and its look under way."""

    index: KeptSource | None = None
    # (turns, newest sequence) when the index was built.
    written: tuple[int, int] | None = None
    looked_at: float = float("-inf")
    changed: bool = False
    look: asyncio.Task[None] | None = None


class KeptWords:
    """A store's big sources' word indexes (see the module docstring)."""

    def __init__(self, store: ConversationStore, *, max_bytes: int = MAX_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # Weakly: the store keeps this (`kept_words`), this must not keep the store.
        self._store = weakref.ref(store)
        self.max_bytes = max_bytes
        self._clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        store.subscribe(self._heard)

    def usable(self, conversation_id: str) -> KeptSource | None:
        """The conversation's kept index, or None (not built yet, or not big enough): never
        waits; starts a look in the background when one is due."""
        kept = self._kept.setdefault(conversation_id, _Kept())
        self._kept.move_to_end(conversation_id)
        if (kept.look is None or kept.look.done()) and (
                kept.changed or self._clock() - kept.looked_at >= CHECK_SECONDS):
            kept.looked_at, kept.changed = self._clock(), False
            kept.look = asyncio.create_task(self._look(conversation_id, kept))
        return kept.index

    async def ready(self, conversation_id: str) -> KeptSource | None:
        """The conversation's index once the look under way (or one started now) is done."""
        self.usable(conversation_id)
        look = self._kept[conversation_id].look
        if look is not None:
            await asyncio.shield(look)
        kept = self._kept.get(conversation_id)
        return kept.index if kept is not None else None

    def _heard(self, change: HistoryChange) -> None:
        kept = self._kept.get(change.conversation_id)
        if kept is not None:
            kept.changed = True

    async def _look(self, conversation_id: str, kept: _Kept) -> None:
        store = self._store()
        if store is None:
            return
        try:
            turns = await store.count(conversation_id)
            newest = await store.get(conversation_id, limit=1)
            written = (turns, (newest[0].sequence or 0) if newest else 0)
            if turns < KEPT_SECTIONS:
                self._keep(conversation_id, kept, None, None)
            elif written != kept.written:
                self._keep(conversation_id, kept,
                           await _built(store, conversation_id, newest=written[1]), written)
        except Exception:
            log.exception("knowledge.words_not_kept", conversation_id=conversation_id)

    def _keep(self, conversation_id: str, kept: _Kept, index: KeptSource | None,
              written: tuple[int, int] | None) -> None:
        kept.index, kept.written = index, written
        if index is not None and index.size > self.max_bytes:
            kept.index = kept.written = None
        while self._bytes() > self.max_bytes:
            oldest = next(k for k in self._kept.values() if k.index is not None)
            oldest.index = oldest.written = None

    def _bytes(self) -> int:
        return sum(k.index.size for k in self._kept.values() if k.index is not None)


async def _built(store: ConversationStore, conversation_id: str, *, newest: int
                 ) -> KeptSource:
    """The kept words of the conversation's sections up to sequence `newest`, read a part at
    a time, each part counted in a thread (`_count`)."""
    from threadline.history.word_index import WordIndexBuilder

    started = time.perf_counter()
    builder = WordIndexBuilder()
    documents = _Documents()
    for after in range(0, newest, READ_SEQUENCES):
        turns = await store.get(conversation_id, after_sequence=after,
                                through_sequence=after + READ_SEQUENCES)
        await asyncio.to_thread(_count, builder, documents, turns)
        if (after + READ_SEQUENCES) % PROGRESS_SEQUENCES == 0:
            log.info("knowledge.words_indexing", conversation_id=conversation_id,
                     read_through=after + READ_SEQUENCES, newest=newest,
                     sections=builder.turns)
    # Finished in the thread too: a source of 100,000 documents is 100,000 tuples to make.
    kept = await asyncio.to_thread(lambda: documents.kept(builder.index()))
    log.info("knowledge.words_indexed", conversation_id=conversation_id,
             sections=kept.words.sections, stems=len(kept.words.stems),
             postings=len(kept.words.rows), bytes=kept.size,
             seconds=round(time.perf_counter() - started, 2))
    return kept


@dataclass(slots=True)
class _Documents:
    """The documents of the sections read so far (see `KeptSource`)."""

    document_of_row: array[int] = field(default_factory=lambda: array("i"))
    # A document is its key and its digest (a sync stopped half-way leaves both versions).
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)
    leads: dict[int, int] = field(default_factory=dict)

    def kept(self, words: WordIndex) -> KeptSource:
        """These documents beside `words`, the index of the same sections."""
        documents = [(key, self.leads.get(number)) for (key, _), number in self.numbers.items()]
        # A tuple, a key and an int a document.
        size = (words.size + self.document_of_row.itemsize * len(self.document_of_row)
                + sum(120 + len(key) for key, _ in documents))
        return KeptSource(words, self.document_of_row, documents, size)


def _count(builder: WordIndexBuilder, documents: _Documents,
           turns: Sequence[StoredMessage]) -> None:
    """The words and documents of the sections among `turns` (the next ones by sequence)."""
    placed = [(turn, place) for turn in turns if (place := section_document(turn))]
    builder.add(turn for turn, _ in placed)
    for turn, (key, digest, part) in placed:
        number = documents.numbers.setdefault((key, digest), len(documents.numbers))
        documents.document_of_row.append(number)
        if part == 0:
            documents.leads[number] = turn.sequence or 0


_KEPT: weakref.WeakKeyDictionary[ConversationStore, KeptWords] = weakref.WeakKeyDictionary()


def kept_words(store: ConversationStore) -> KeptWords | None:
    """`store`'s kept word indexes (made on first ask), or None without numpy."""
    found = _KEPT.get(store)
    if found is None and vectors_supported():
        found = _KEPT[store] = KeptWords(store)
    return found
