"""Grounding a turn: the best sections of the agent's sources, in its prompt, within a share of
its token budget, numbered so the reply can say where it read what it says. The block takes
half of that share when the sections found agree on one document, all of it when they do not
(`block_room`).

The block goes where recall's fresh block goes, with the newest turn (the agent puts it just
before the answered turn): what changes every turn stays at the end of the prompt, so the
cached prefix (system prompt, kept recall block, earlier turns) is the same bytes with it or
without it, and it costs the prompt cache no more than recall's fresh block already does
(LESSONS: "keep what changes at the end and keep it stable"). The block is a pure function of
the sections found, in rank order: the same turn asked again renders the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from threadline.history.prompt import PromptMessage
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter
from threadline.knowledge.sections import HEADING_SEPARATOR
from threadline.knowledge.source import FoundSection

KNOWLEDGE_HEADER = ("From the team's documents (found for this message; when you use one, "
                    "name its document and section, with its link when it has one):")
SEARCH_HEADER = "Sections found in the team's documents:"
SEPARATOR = "\n---\n"
# Sections asked of the sources for a block (more than a block holds: it takes the best that
# fit, and a long first section does not leave the rest of the room empty).
CANDIDATES = 12
# A turn whose first `CLEAR_PAGE_SECTIONS` sections found are all of one document (the searches
# agree on the page) has its block take `CLEAR_PAGE_SHARE` of the room; see `block_room`. On
# kb-dev (bench/knowledge.py; 61% of its questions are such turns) this puts the median of
# block + one search at 982 tokens for 90.7% / 88.1% of all / first questions; it does not make
# tokens go further on average (docs/knowledge.md, "Measured").
CLEAR_PAGE_SECTIONS = 4
CLEAR_PAGE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Grounded:
    """What grounding shows one turn: the block (None: nothing found or no room) and its
    sections, in the order the block numbers them."""

    message: PromptMessage | None
    sections: tuple[FoundSection, ...]
    tokens: int


NOTHING = Grounded(None, (), 0)


def cite(section: FoundSection) -> str:
    """How a section is named in the console: "Title > Heading <link>"."""
    return f"{section.path} <{section.link}>" if section.link else section.path


def document_line(section: FoundSection) -> str:
    """The line a document's sections are shown under: "# Title <link>" (once per document,
    so its sections cost only their own headings)."""
    return f"# {section.title} <{section.link}>" if section.link else f"# {section.title}"


def section_entry(number: int, section: FoundSection) -> str:
    """A numbered section under its document's line: "[n] Heading > Subheading" (a heading
    that only repeats the document's title is left out) then its text."""
    headings = [h for h in section.headings if h.casefold() != section.title.casefold()]
    label = HEADING_SEPARATOR.join(headings)
    return f"[{number}] {label}\n{section.text}" if label else f"[{number}]\n{section.text}"


def by_document(sections: Sequence[FoundSection]) -> list[FoundSection]:
    """`sections` with each document's sections together, documents in the order of their
    best section, each document's sections in their own rank order."""
    groups: dict[tuple[str, str], list[FoundSection]] = {}
    for section in sections:
        groups.setdefault((section.source, section.document), []).append(section)
    return [s for group in groups.values() for s in group]


def render_sections(sections: Sequence[FoundSection], *, header: str) -> str:
    """Numbered sections under `header`, in the order given, each document's line before the
    first of its sections (give them `by_document`, so each document's line comes once)."""
    parts: list[str] = []
    document: tuple[str, str] | None = None
    for number, section in enumerate(sections, start=1):
        entry = section_entry(number, section)
        if (section.source, section.document) != document:
            document = (section.source, section.document)
            entry = f"{document_line(section)}\n{entry}"
        parts.append(entry)
    return f"{header}\n{SEPARATOR.join(parts)}"


def block_room(found: Sequence[FoundSection], room: int) -> int:
    """The tokens a turn's block may take of its `room`: all of it when the best sections
    found come from several documents (the answer may be in any of them, and each needs its
    own sections), `CLEAR_PAGE_SHARE` of it when the first `CLEAR_PAGE_SECTIONS` are all of
    one document (its best sections come first, and what the block leaves out the
    knowledge_search tool finds). A budget rule on the sections found, not on their scores, so
    it holds for any source type."""
    first = found[:CLEAR_PAGE_SECTIONS]
    clear = len(first) == CLEAR_PAGE_SECTIONS and len(
        {(s.source, s.document) for s in first}) == 1
    return int(room * CLEAR_PAGE_SHARE) if clear else room


def fit_sections(found: Sequence[FoundSection], *, room: int, counter: TokenCounter,
                 header: str = KNOWLEDGE_HEADER) -> Grounded:
    """The best of `found` whose rendered block fits `room` tokens, taken best first (one
    that does not fit is passed over for a shorter one after it), shown `by_document`."""
    chosen: list[FoundSection] = []
    documents: set[tuple[str, str]] = set()
    used = PER_MESSAGE_OVERHEAD + counter.count(header) + 1
    for section in found:
        cost = counter.count(section_entry(len(chosen) + 1, section)) + 3
        document = (section.source, section.document)
        if document not in documents:
            cost += counter.count(document_line(section)) + 1
        if used + cost <= room:
            chosen.append(section)
            documents.add(document)
            used += cost
    while chosen:
        shown = by_document(chosen)
        text = render_sections(shown, header=header)
        tokens = PER_MESSAGE_OVERHEAD + counter.count(text)
        if tokens <= room:
            return Grounded(PromptMessage("system", text, part="knowledge"), tuple(shown),
                            tokens)
        chosen.pop()  # the estimate was short: the worst-ranked section goes
    return NOTHING
