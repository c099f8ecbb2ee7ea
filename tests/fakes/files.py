"""Small real files for the file tests: a PNG, a PDF with text, an Ogg voice note header."""

from __future__ import annotations

import struct
import zlib

from threadline.agents.tools import FunctionTool, tool
from threadline.history.files import ToolFile


def png(width: int = 64, height: int = 48) -> bytes:
    """A valid grey PNG of this size."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def pdf(text: str, *, stream: bytes | None = None) -> bytes:
    """A one-page PDF whose page shows `text` (ASCII), with a correct cross-reference table;
    `stream` replaces the page's content object whole."""
    shown = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        stream or b"<< /Length %d >>\nstream\n" % len(shown) + shown + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def slow_pdf(operations: int = 400_000) -> bytes:
    """A small PDF that takes pypdf long to read: one page whose compressed content stream
    inflates to `operations` text operators (about 30 s for the default on a laptop)."""
    stream = zlib.compress(b"BT (x) Tj 1 0 0 1 0 0 Tm " * operations, 9)
    return pdf("", stream=b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
               + stream + b"\nendstream")


def ogg_voice() -> bytes:
    """The start of an Ogg Opus voice note (enough for the type to be read from it)."""
    return b"OggS\x00\x02" + b"\x00" * 20 + b"OpusHead\x01\x01" + b"\x00" * 64


def chart_tool(chart: bytes) -> FunctionTool:
    """A `draw_chart` tool that returns `chart` as the file `sales.png` (what an agent's
    charting tool would)."""

    @tool
    async def draw_chart() -> ToolFile:
        """Draws this month's sales as a chart."""
        return ToolFile(name="sales.png", data=chart)

    return draw_chart
