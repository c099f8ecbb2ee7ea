"""Reading a document's text within a budget of time, memory, pages and characters.

A PDF is a program for its parser: a 14 KB file can hold a compressed content stream that
takes pypdf minutes to walk. pypdf run in a thread cannot be stopped (a thread cannot be
killed, and the interpreter would wait for it at exit), so a PDF is read in a child process
(`python -m threadline.channels.document_reader`, the bytes on stdin, the text on stdout) that
is killed when its time is up; its address space and CPU time are capped too, so a file that
inflates to gigabytes fails in the child, not in the bot. Plain text, Markdown and CSV are
decoded in-process: their cost is linear in bytes the size limit already bounds.
"""

from __future__ import annotations

import asyncio
import io
import sys

MAX_DOCUMENT_CHARS = 20_000
# How the text of a PDF that could not be read begins (a reader of many files reports it).
UNREADABLE_PDF = "(the PDF could not be read"
MAX_PDF_PAGES = 200
# The child's address space: pypdf and a few pages' inflated streams fit well within it.
_CHILD_MEMORY_BYTES = 1024 * 1024 * 1024


async def document_text(data: bytes, media_type: str, *, seconds: float,
                        max_chars: int = MAX_DOCUMENT_CHARS) -> str | None:
    """The document's text, cut at `max_chars`; None when it could not be read within
    `seconds`."""
    if media_type != "application/pdf":
        return _within_chars(data.decode("utf-8", errors="replace"), max_chars)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", __name__, str(int(seconds) + 1), str(max_chars),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        async with asyncio.timeout(seconds):
            out, _ = await child.communicate(data)
    except TimeoutError:
        return None
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    if child.returncode != 0:
        return f"{UNREADABLE_PDF}: it is damaged or too large to open)"
    return out.decode("utf-8", errors="replace")


def _pdf_text(data: bytes, max_chars: int) -> str:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        parts: list[str] = []
        length = 0
        for page in reader.pages[:MAX_PDF_PAGES]:
            text = page.extract_text() or ""
            parts.append(text)
            length += len(text)
            if length > max_chars:  # the rest would be cut anyway
                break
    except Exception as exc:  # a broken PDF is kept; the prompt says it could not be read
        return f"{UNREADABLE_PDF}: {exc})"
    return _within_chars("\n".join(parts), max_chars)


def _within_chars(text: str, max_chars: int) -> str:
    text = text.strip()
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n(cut at {max_chars:,} characters)"
    return text


def _main() -> None:
    import resource

    cpu_seconds, max_chars = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (_CHILD_MEMORY_BYTES, _CHILD_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    sys.stdout.buffer.write(_pdf_text(sys.stdin.buffer.read(), max_chars).encode("utf-8"))


if __name__ == "__main__":
    _main()
