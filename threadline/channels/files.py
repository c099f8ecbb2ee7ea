"""Taking in the files a message brings: download, check, read, keep, and note what failed.

Every platform hands its files over as `IncomingFile`s (a name, the platform's id, the size it
claims, and how to fetch the bytes); `take_in` does the rest the same way everywhere:
- a file over the channel's `max_file_bytes` is not downloaded (by its claimed size) or not
  kept (by its real size); a download that fails, or a type we refuse, the same: the turn gets
  a note instead, so the text of the message is still answered and the answer can say why;
- the type is sniffed from the bytes (`threadline.history.files.sniff`), never the name;
- a document (text, Markdown, CSV, PDF) becomes text in the turn, up to `MAX_DOCUMENT_CHARS`,
  so the prompt shows it within the budget and search finds it like any turn;
- a voice note or audio file is transcribed when the config names a speech endpoint; the
  transcript is the turn's text (the file is marked `transcribed`) and the audio is kept;
- the bytes are kept (`FileStore.put`) before the turn is handed over, so a turn the platform
  was told "received" never names a file whose bytes are missing.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from threadline.history.file_store import FileStore
from threadline.history.files import (
    TurnFile,
    files_extra,
    image_size,
    kind_of,
    sha256_of,
    sniff,
)
from threadline.history.model import MessageMetadata, StoredMessage

log = structlog.get_logger("threadline.files")

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024  # Telegram's Bot API download limit
MAX_DOCUMENT_CHARS = 20_000

Fetch = Callable[[], Awaitable[bytes]]


class Transcribe(Protocol):
    """Turns a voice note into text (an OpenAI-compatible `/audio/transcriptions` call)."""

    async def __call__(self, data: bytes, *, name: str, media_type: str) -> str: ...


@dataclass(frozen=True, slots=True)
class IncomingFile:
    """A file as a platform announces it, before it is downloaded."""

    name: str
    platform_id: str
    declared_size: int
    fetch: Fetch


@dataclass(slots=True)
class FileIntake:
    """What a channel needs to take files in, set by the team that attaches it."""

    store: FileStore
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    transcribe: Transcribe | None = None


def _megabytes(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


async def take_in(turn: StoredMessage, incoming: Sequence[IncomingFile],
                  intake: FileIntake | None) -> StoredMessage:
    """`turn` with its files taken in: kept, read, described in its text and metadata."""
    if not incoming:
        return turn
    files = [await _take_one(f, intake, turn.conversation_id) for f in incoming]
    content = turn.content
    transcripts = [f.text for f in files if f.transcribed and f.text]
    if transcripts and not content.strip():
        content = "\n".join(transcripts)
    lines = [f.prompt_line() for f in files]
    content = "\n".join([content, *lines]) if content else "\n".join(lines)
    extra = {**turn.metadata.extra, **files_extra(files)}
    metadata = MessageMetadata.coerce({**turn.metadata.as_dict(), "extra": extra})
    return replace(turn, content=content, metadata=metadata)


async def _take_one(incoming: IncomingFile, intake: FileIntake | None,
                    conversation_id: str) -> TurnFile:
    name = incoming.name or "file"
    if intake is None:
        return TurnFile(name=name, media_type="", size=incoming.declared_size,
                        platform_id=incoming.platform_id,
                        note="this bot keeps no files (no files are set up for it)")
    limit = intake.max_file_bytes
    refused = (f"{_megabytes(incoming.declared_size)} is over this channel's limit of "
               f"{_megabytes(limit)}")
    if incoming.declared_size > limit:
        return TurnFile(name=name, media_type="", size=incoming.declared_size,
                        platform_id=incoming.platform_id, note=refused)
    try:
        data = await incoming.fetch()
    except Exception as exc:  # any platform or network failure: the text is still answered
        log.warning("files.download_failed", conversation_id=conversation_id, file=name,
                    error=str(exc))
        return TurnFile(name=name, media_type="", size=incoming.declared_size,
                        platform_id=incoming.platform_id,
                        note="the download failed; please send it again")
    media_type = sniff(data, name)
    file = TurnFile(name=name, media_type=media_type, size=len(data),
                    platform_id=incoming.platform_id)
    if len(data) > limit:
        return replace(file, note=f"{_megabytes(len(data))} is over this channel's limit of "
                                  f"{_megabytes(limit)}")
    kind = kind_of(media_type)
    if kind == "other":
        return replace(file, note=f"{media_type} files are not read here; send an image, "
                                  "a PDF, a text file or a voice note")
    if kind == "image":
        width, height = image_size(data)
        file = replace(file, width=width, height=height)
    elif kind == "document":
        file = replace(file, text=await asyncio.to_thread(_document_text, data, media_type))
    elif kind == "audio" and intake.transcribe is not None:
        try:
            text = await intake.transcribe(data, name=name, media_type=media_type)
            file = replace(file, text=text.strip(), transcribed=True)
        except Exception as exc:  # the audio is still kept; the turn says it is not heard
            log.warning("files.transcription_failed", conversation_id=conversation_id,
                        file=name, error=str(exc))
    sha = sha256_of(data)
    await intake.store.put(data, sha256=sha, media_type=media_type)
    return replace(file, sha256=sha)


def _document_text(data: bytes, media_type: str) -> str:
    if media_type == "application/pdf":
        from pypdf import PdfReader

        try:
            reader = PdfReader(io.BytesIO(data))
            text = "\n".join(page.extract_text() or "" for page in reader.pages)
        except Exception as exc:  # a broken PDF is kept; the prompt says it could not be read
            return f"(the PDF could not be read: {exc})"
    else:
        text = data.decode("utf-8", errors="replace")
    text = text.strip()
    if len(text) > MAX_DOCUMENT_CHARS:
        text = text[:MAX_DOCUMENT_CHARS] + f"\n(cut at {MAX_DOCUMENT_CHARS:,} characters)"
    return text
