"""A document cut into sections along its own headings, each knowing where it sits.

A support question is answered by a paragraph or two, not by a whole page: a page handed to the
model whole spends the knowledge budget on text nobody asked about, and a fixed-size passage cut
through a heading loses what the text is about. So a document is split where its author split
it: Markdown headings (`#` to `######`), and in text without them, the short title-like line
that opens a block ("The Hearing Process" above its paragraph), which plain text, PDFs and
pages saved from a help centre use instead. Each section keeps the document's title and its
heading path ("Benefits > How you apply > Documents"), which are searched with its text and
shown with it, so "how do I apply?" finds the section under "How you apply" and the model can
say where it read it. A section longer than `max_tokens` is cut at paragraph, then line, then
sentence boundaries into parts that keep the same heading path.

Character offsets (`start`, `end`) point into the document's text as read, so a reader (the
benchmark, a citation) can find exactly what a section holds. A section's range opens at the
heading lines just above its text (the first part's, for a section cut into parts): they are
in its heading path, which is shown with it, so a question answered by a heading ("Step 1:
Complete the form") is answered by the section under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from threadline.history.tokens import TokenCounter

HEADING_SEPARATOR = " > "
# A title-like line in text without Markdown headings: at most this many characters and words.
PLAIN_HEADING_CHARS = 90
PLAIN_HEADING_WORDS = 14

_MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"[.!?;:,]\s*$")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a document: its heading path under the title, its text, and where that
    text is in the document (`start`, `end`: character offsets)."""

    title: str
    headings: tuple[str, ...]
    text: str
    start: int
    end: int

    @property
    def path(self) -> str:
        """"Title > Heading > Subheading", as searched and shown."""
        return HEADING_SEPARATOR.join((self.title, *self.headings))

    @property
    def searched_text(self) -> str:
        """What is indexed and shown: the heading path, then the text."""
        return f"{self.path}\n{self.text}"


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    start: int
    end: int


def split_sections(text: str, *, title: str, counter: TokenCounter, max_tokens: int
                   ) -> list[Section]:
    """`text` as sections, in document order; see the module docstring."""
    lines = list(_lines(text))
    # A title line alone does not make the rest Markdown-structured.
    markdown = any(_MARKDOWN_HEADING.match(line.text) for line in lines[1:])
    path: list[tuple[int, str, int]] = []  # (level, heading, where its line starts)
    body: list[_Line] = []
    sections: list[Section] = []
    after = 0  # where the last section's text ended: headings below it open the next one

    def close() -> None:
        nonlocal after
        if any(line.text.strip() for line in body):
            headings = tuple(h for _, h, _ in path)
            opened = min((at for _, _, at in path if at >= after), default=None)
            parts = list(_sized(body, title=title, headings=headings, counter=counter,
                                max_tokens=max_tokens))
            if opened is not None:
                parts[0] = replace(parts[0], start=opened)
            sections.extend(parts)
            after = parts[-1].end
        body.clear()

    for index, line in enumerate(lines):
        heading = _heading(lines, index, markdown=markdown)
        if heading is None:
            body.append(line)
            continue
        level, words = heading
        close()
        if level == 1 and not path and words.strip() == title.strip():
            continue  # the document's own title line
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, words, line.start))
    close()
    return sections


def _lines(text: str) -> Iterator[_Line]:
    start = 0
    for raw in text.splitlines(keepends=True):
        yield _Line(raw.rstrip("\r\n"), start, start + len(raw.rstrip("\r\n")))
        start += len(raw)


def _heading(lines: list[_Line], index: int, *, markdown: bool) -> tuple[int, str] | None:
    """(level, words) when line `index` is a heading: a Markdown one, or (in text without
    any) a short line that does not end like a sentence, after a blank line or the start, and
    followed directly by a longer line of text."""
    line = lines[index].text
    found = _MARKDOWN_HEADING.match(line)
    if found:
        return len(found.group(1)), found.group(2).strip()
    if markdown:
        return None
    stripped = line.strip()
    if (not stripped or len(stripped) > PLAIN_HEADING_CHARS
            or len(stripped.split()) > PLAIN_HEADING_WORDS or _SENTENCE_END.search(stripped)):
        return None
    before = lines[index - 1].text.strip() if index > 0 else ""
    after = lines[index + 1].text.strip() if index + 1 < len(lines) else ""
    if before or not after or len(after) <= len(stripped):
        return None
    return 7, stripped  # deeper than any Markdown level: plain headings follow each other


def _sized(body: list[_Line], *, title: str, headings: tuple[str, ...],
           counter: TokenCounter, max_tokens: int) -> Iterator[Section]:
    """The body's text as one section, or parts of at most about `max_tokens` each, of about
    the same size (no short tail cut off a long section)."""
    pieces = list(_pieces(body, counter=counter, max_tokens=max_tokens))
    total = sum(cost for _, cost in pieces)
    target = total / max(-(-total // max_tokens), 1)
    part: list[_Line] = []
    used = 0
    for piece, cost in pieces:
        if part and (used + cost > max_tokens or used >= target):
            yield _section(part, title=title, headings=headings)
            part, used = [], 0
        part.append(piece)
        used += cost
    if part:
        yield _section(part, title=title, headings=headings)


def _pieces(body: list[_Line], *, counter: TokenCounter, max_tokens: int
            ) -> Iterator[tuple[_Line, int]]:
    """The body's non-blank lines with their token counts; a line over `max_tokens` comes as
    its sentences (a sentence over it comes whole: it is not cut mid-sentence)."""
    for line in body:
        if not line.text.strip():
            continue
        cost = counter.count(line.text)
        if cost <= max_tokens:
            yield line, cost
            continue
        offset = 0
        for sentence in _SENTENCE_BREAK.split(line.text):
            at = line.text.index(sentence, offset)
            offset = at + len(sentence)
            piece = _Line(sentence, line.start + at, line.start + offset)
            yield piece, counter.count(sentence)


def _section(part: list[_Line], *, title: str, headings: tuple[str, ...]) -> Section:
    text = "\n".join(line.text.strip() for line in part)
    return Section(title=title, headings=headings, text=text, start=part[0].start,
                   end=part[-1].end)
