"""Bad input in a knowledge folder becomes one line of the sync report each, and nothing else
stops: text that is not UTF-8, a PDF without a text layer, a file over the size limit, a
symbolic link out of the folder, a kind that is not read. The good documents are stored."""

from __future__ import annotations

import io
from pathlib import Path

from pypdf import PdfWriter

from tests.knowledge.helpers import documents_source, stored_sections, synced, write
from threadline.history.store import ConversationStore


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_each_broken_file_is_a_line_and_the_rest_is_synced(
        store: ConversationStore, tmp_path: Path) -> None:
    secret = write(tmp_path / "elsewhere", {"secret.md": "# Secret\n\nThe vault code is 0000.\n"})
    folder = write(tmp_path / "help", {
        "good.md": "# Opening hours\n\nThe desk is open from nine to five on weekdays.\n",
        "latin1.txt": "Caf\xe9 menu".encode("latin-1"),
        "scan.pdf": blank_pdf(),
        "huge.md": "# Huge\n\n" + "word " * 2000,
        "slides.pptx": b"PK\x03\x04",
    })
    (folder / "link.md").symlink_to(secret / "secret.md")
    report = await synced(documents_source(store, folder, max_file_bytes=5_000))

    reasons = {p.key: p.reason for p in report.problems}
    assert set(reasons) == {"latin1.txt", "scan.pdf", "huge.md", "link.md", "slides.pptx"}
    assert "not UTF-8" in reasons["latin1.txt"] and "save it as UTF-8" in reasons["latin1.txt"]
    assert "no text layer" in reasons["scan.pdf"]
    assert "max_file_bytes" in reasons["huge.md"]
    assert "outside the folder" in reasons["link.md"]
    assert "not read" in reasons["slides.pptx"]
    assert report.added == 1
    lines = report.lines()
    assert "5 not read" in lines[0] and len(lines) == 6
    kept = await stored_sections(store, "help")
    assert {s.document for s in kept} == {"good.md"}
    assert not any("vault" in s.text for s in kept)
