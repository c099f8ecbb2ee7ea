"""Reading one document (a file's bytes) into its title and text, or saying why it cannot be.

A knowledge folder is whatever a team keeps: Markdown, plain text, HTML saved from a help
centre, PDFs. Each is read into plain text with its headings kept as Markdown headings (so
`sections` cuts it where its author did). What cannot be read is a `Problem`, one line of the
sync report that says what was wrong and what to do, never an exception that stops the sync:
a file over the size limit, text that is not UTF-8, a PDF without a text layer (a scan) or one
that will not open within its time (PDFs are parsed in a killable child process:
`threadline.channels.document_reader`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath

from threadline.channels.document_reader import UNREADABLE_PDF, document_text

# Seconds one PDF may take to parse before it is reported and skipped.
PDF_SECONDS = 30.0
# Characters of a PDF's text that are read (a 500-page manual is about 1.5 million).
MAX_PDF_CHARS = 2_000_000
READABLE = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
            ".html": "html", ".htm": "html", ".pdf": "pdf"}


@dataclass(frozen=True, slots=True)
class Document:
    """A readable document: `key` names it within its source (a relative path, a URL),
    `digest` is the sha256 of its bytes (a document whose digest is unchanged is not read
    again), `link` where a person can open it (None: nowhere)."""

    key: str
    title: str
    text: str
    digest: str
    link: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """A document that was not read, and why, in words with what to do."""

    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.key}: {self.reason}"


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def kind_of(name: str, media_type: str | None = None) -> str | None:
    """"markdown", "text", "html" or "pdf" by the name's suffix (or a fetched page's media
    type); None: not a kind that is read."""
    if media_type:
        base = media_type.split(";")[0].strip().lower()
        by_type = {"text/markdown": "markdown", "text/plain": "text", "text/html": "html",
                   "application/xhtml+xml": "html", "application/pdf": "pdf"}
        if base in by_type:
            return by_type[base]
    return READABLE.get(PurePosixPath(name).suffix.lower())


async def read_document(data: bytes, *, key: str, kind: str, link: str | None = None
                        ) -> Document | Problem:
    """The document in `data` (of `kind`, see `kind_of`), or the problem that stops it."""
    digest = digest_of(data)
    if kind == "pdf":
        text = await document_text(data, "application/pdf", seconds=PDF_SECONDS,
                                   max_chars=MAX_PDF_CHARS)
        if text is None:
            return Problem(key, f"the PDF did not open within {PDF_SECONDS:.0f} s (it may be "
                                "built to be slow to parse); skipped")
        if text.startswith(UNREADABLE_PDF):
            return Problem(key, f"{text.strip('()')}; skipped")
        if not text.strip():
            return Problem(key, "the PDF has no text layer (a scanned image?); run it through "
                                "OCR and sync again")
        return Document(key, _stem_title(key), text, digest, link)
    try:
        decoded = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Problem(key, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start:,}); save it as UTF-8 and sync again")
    if "\x00" in decoded:
        return Problem(key, "holds NUL bytes: a binary file named like text; skipped")
    if kind == "html":
        title, text = html_text(decoded)
        return Document(key, title or _stem_title(key), text, digest, link)
    first = decoded.split("\n", 1)[0].strip()
    title = first[2:].strip() if first.startswith("# ") else _stem_title(key)
    return Document(key, title, decoded, digest, link)


def _stem_title(key: str) -> str:
    stem = PurePosixPath(key.rstrip("/")).stem or key
    return stem.replace("-", " ").replace("_", " ").strip().capitalize() or key


class _HtmlText(HTMLParser):
    """An HTML page's visible text, its headings as Markdown headings, its <title>."""

    _SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    _BLOCKS = frozenset({"p", "div", "li", "tr", "br", "section", "article", "ul", "ol",
                         "table", "blockquote", "pre", "dd", "dt", "main", "header", "footer"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIPPED:
            self._skipping += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self._SKIPPED:
            self._skipping = max(self._skipping - 1, 0)
        elif (len(tag) == 2 and tag[0] == "h" and tag[1] in "123456") or tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skipping:
            self.parts.append(" ".join(data.split()) + (" " if data[-1:].isspace() else ""))


def html_text(page: str) -> tuple[str, str]:
    """(title, text) of an HTML page; headings become Markdown headings."""
    parser = _HtmlText()
    parser.feed(page)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    title = " ".join(parser.title.split())
    if not title:
        title = next((line[2:] for line in lines if line.startswith("# ")), "")
    return title, text.strip() + "\n"
