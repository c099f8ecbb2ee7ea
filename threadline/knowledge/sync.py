"""Bringing a documents source's stored sections up to date with its documents.

    report = await sync_documents(store, "help", documents, counter=counter,
                                  section_tokens=250, progress=print_progress)

Each document is compared with what the source holds by the sha256 of its bytes: an unchanged
one costs nothing (no split, no write, no embedding), a changed one has its sections replaced,
a new one is added, and one the source no longer has is deleted with its sections. A second
sync of unchanged documents therefore writes nothing. What could not be read (`Problem`) is a
line of the report and nothing more: its old sections, if any, stay until it can be read or
is removed. Vectors are not made here: the vector indexer finds the new sections as it finds
new turns (`threadline knowledge sync` runs it to the end before it returns). A sync that
wrote MERGE_AFTER_SECTIONS sections or more has the store merge its word index then
(`SearchIndexMerging`), rather than leave every search to walk the load's pieces until the
database merges them itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import structlog

from threadline.history.model import utc_now
from threadline.history.store import ConversationStore, SearchIndexMerging
from threadline.history.tokens import TokenCounter
from threadline.knowledge.documents import Document, Problem
from threadline.knowledge.sections import split_sections
from threadline.knowledge.shelf import (
    StoredDocument,
    replace_sections,
    section_turn,
    stored_documents,
)

log = structlog.get_logger("threadline.knowledge.sync")

# Sections written by one sync from which the store's word index is merged after it. Merging
# rewrites the whole index (every conversation's, on SQLite), so a small sync, whose few
# pieces cost searches little, does not pay for it. At 100,000 sections, SQLite's 10 segments
# merged in 0.7 s.
MERGE_AFTER_SECTIONS = 1_000

# (source, documents done, documents seen so far, the document just done)
SyncProgress = Callable[[str, int, int, str], None]


@dataclass(slots=True)
class SyncReport:
    """What one source's sync did, and the documents it could not read."""

    source: str
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    sections_written: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def did_work(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def lines(self) -> list[str]:
        """The report as a person reads it: one summary line, then one per problem."""
        head = (f"{self.source}: {self.added} added, {self.changed} changed, {self.removed} "
                f"removed, {self.unchanged} unchanged ({self.sections_written} sections "
                f"written) in {self.seconds:.1f} s")
        if self.problems:
            head += f"; {len(self.problems)} not read:"
        return [head, *(f"  {problem}" for problem in self.problems)]


async def sync_documents(store: ConversationStore, source: str,
                         documents: AsyncIterator[Document | Problem], *,
                         counter: TokenCounter, section_tokens: int,
                         progress: SyncProgress | None = None,
                         merge_after: int = MERGE_AFTER_SECTIONS) -> SyncReport:
    """Sync `source`'s stored sections with `documents` (see the module docstring); the word
    index is merged when `merge_after` sections or more were written."""
    started = time.monotonic()
    report = SyncReport(source)
    held = await stored_documents(store, source)
    seen: set[str] = set()
    done = 0
    async for found in documents:
        done += 1
        seen.add(found.key)
        if isinstance(found, Problem):
            report.problems.append(found)
            log.warning("knowledge.not_read", source=source, document=found.key,
                        reason=found.reason)
        else:
            await _sync_one(store, source, found, held, report, counter=counter,
                            section_tokens=section_tokens)
        if progress is not None:
            progress(source, done, done, found.key)
    for key in sorted(set(held) - seen):
        await replace_sections(store, source, remove=held[key].section_ids, add=())
        report.removed += 1
    if report.sections_written >= merge_after and isinstance(store, SearchIndexMerging):
        await store.merge_search_index()
    report.seconds = time.monotonic() - started
    log.info("knowledge.synced", source=source, added=report.added, changed=report.changed,
             removed=report.removed, unchanged=report.unchanged,
             sections=report.sections_written, problems=len(report.problems),
             seconds=round(report.seconds, 2))
    return report


async def _sync_one(store: ConversationStore, source: str, document: Document,
                    held: dict[str, StoredDocument], report: SyncReport, *, counter: TokenCounter,
                    section_tokens: int) -> None:
    before = held.get(document.key)
    if before is not None and before.digest == document.digest:
        report.unchanged += 1
        return
    sections = split_sections(document.text, title=document.title, counter=counter,
                              max_tokens=section_tokens)
    now = utc_now()
    turns = [section_turn(source, document, section, part=n, timestamp=now)
             for n, section in enumerate(sections)]
    await replace_sections(store, source, add=turns,
                           remove=before.section_ids if before is not None else [])
    report.sections_written += len(turns)
    if before is None:
        report.added += 1
    else:
        report.changed += 1
