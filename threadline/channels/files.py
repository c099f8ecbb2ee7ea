"""Taking in the files a message brings: download and keep them before the ack, read them after.

Every platform hands its files over as `IncomingFile`s (a name, the platform's id, the size it
claims, and how to fetch at most so many bytes); `take_in` does the rest the same way
everywhere, before the platform is acknowledged:
- a file over the channel's `max_file_bytes` is not downloaded (by its claimed size) and its
  download is stopped at the limit (the claim is not trusted); a download that fails or is
  refused (`threadline.channels.fetch_policy`: a host that is not the platform's), or a type
  we refuse, the same: the turn gets a note instead, so the text of the message is still
  answered and the answer can say why;
- the type is sniffed from the bytes (`threadline.history.files.sniff`), never the name;
- the bytes are kept (`FileStore.put`) before the turn is handed over, so a turn the platform
  was told "received" never names a file whose bytes are missing.
Nothing is parsed before the ack: a document or a voice note is kept `unread`, and
`read_files` reads it when the turn is answered, within `FileIntake.read_seconds`:
- a document (text, Markdown, CSV, PDF) becomes text in the turn, up to `MAX_DOCUMENT_CHARS`
  (`threadline.channels.document_reader`, a PDF in a child process that is killed when its
  time is up), so the prompt shows it within the budget and search finds it like any turn;
  one that takes longer becomes a line saying it could not be read in time;
- a voice note or audio file is transcribed when the config names a speech endpoint; the
  transcript is the turn's text when the message had none, and the audio is kept.
What was read is kept with the file (`FileStore.describe`), so a turn answered again, or the
same file sent again, is not read twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import structlog

from threadline.channels.document_reader import MAX_DOCUMENT_CHARS, document_text
from threadline.errors import FileRefusedError, FileTooLargeError
from threadline.history.file_store import FileStore
from threadline.history.files import (
    TurnFile,
    files_extra,
    files_of,
    image_size,
    kind_of,
    sha256_of,
    sniff,
)
from threadline.history.model import MessageMetadata, StoredMessage
from threadline.history.store import ConversationStore

log = structlog.get_logger("threadline.files")

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024  # Telegram's Bot API download limit
DEFAULT_READ_SECONDS = 20.0
__all__ = ["MAX_DOCUMENT_CHARS", "Fetch", "FileIntake", "IncomingFile", "read_files", "take_in"]

# Fetches a file's bytes, at most the given number of them (`FileTooLargeError` past it).
Fetch = Callable[[int], Awaitable[bytes]]


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
    read_seconds: float = DEFAULT_READ_SECONDS  # for reading one document or voice note


def _megabytes(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


async def take_in(turn: StoredMessage, incoming: Sequence[IncomingFile],
                  intake: FileIntake | None) -> StoredMessage:
    """`turn` with its files downloaded and kept, named in its text and metadata (unread)."""
    if not incoming:
        return turn
    files = [await _take_one(f, intake, turn.conversation_id) for f in incoming]
    lines = [f.prompt_line() for f in files]
    content = "\n".join([turn.content, *lines]) if turn.content else "\n".join(lines)
    return _with_files(turn, content, files)


async def read_files(turn: StoredMessage, *, intake: FileIntake | None,
                     store: ConversationStore) -> StoredMessage:
    """`turn` with its unread files read (see the module docstring), its stored text too."""
    files = list(files_of(turn.metadata.extra))
    unread = [i for i, f in enumerate(files) if f.unread]
    if intake is None or not unread:
        return turn
    known = await intake.store.descriptions(files[i].sha256 for i in unread)
    content = turn.content
    for i in unread:
        placeholder = files[i].prompt_line()
        files[i] = await _read_one(files[i], intake, known, turn.conversation_id)
        line = files[i].prompt_line()
        if files[i].transcribed and files[i].text and content.startswith(placeholder):
            line = f"{files[i].text}\n{line}"  # a voice note alone: its words are the turn
        content = content.replace(placeholder, line, 1)
    await store.edit_message(turn.conversation_id, turn.id, content)
    return _with_files(turn, content, files)


def _with_files(turn: StoredMessage, content: str, files: Sequence[TurnFile]) -> StoredMessage:
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
    unfetched = TurnFile(name=name, media_type="", size=incoming.declared_size,
                         platform_id=incoming.platform_id)
    if incoming.declared_size > limit:
        return replace(unfetched, note=f"{_megabytes(incoming.declared_size)} is over this "
                                       f"channel's limit of {_megabytes(limit)}")
    try:
        data = await incoming.fetch(limit)
    except FileTooLargeError:
        return replace(unfetched, note=f"it is over this channel's limit of "
                                       f"{_megabytes(limit)} (the download was stopped there)")
    except FileRefusedError as exc:
        log.warning("files.fetch_refused", conversation_id=conversation_id, file=name,
                    error=str(exc))
        return replace(unfetched, note="its link does not point at the platform's own file "
                                       "server, so it was not fetched")
    except Exception as exc:  # any platform or network failure: the text is still answered
        log.warning("files.download_failed", conversation_id=conversation_id, file=name,
                    error=str(exc))
        return replace(unfetched, note="the download failed; please send it again")
    media_type = sniff(data, name)
    file = TurnFile(name=name, media_type=media_type, size=len(data),
                    platform_id=incoming.platform_id)
    kind = kind_of(media_type)
    if kind == "other":
        return replace(file, note=f"{media_type} files are not read here; send an image, "
                                  "a PDF, a text file or a voice note")
    if kind == "image":
        width, height = image_size(data)  # the header only: cheap, bounded
        file = replace(file, width=width, height=height)
    elif kind == "document" or (kind == "audio" and intake.transcribe is not None):
        file = replace(file, unread=True)
    sha = sha256_of(data)
    await intake.store.put(data, sha256=sha, media_type=media_type)
    return replace(file, sha256=sha)


async def _read_one(file: TurnFile, intake: FileIntake, known: dict[str, str],
                    conversation_id: str) -> TurnFile:
    """`file` read: its text from `known` (read before), else read now and kept."""
    done = replace(file, unread=False)
    transcribed = file.kind == "audio"
    if file.sha256 in known:
        return replace(done, text=known[file.sha256], transcribed=transcribed)
    data = await intake.store.get(file.sha256)
    if data is None:
        return replace(done, note="its bytes are no longer kept")
    bound = log.bind(conversation_id=conversation_id, file=file.name)
    if not transcribed:
        text = await document_text(data, file.media_type, seconds=intake.read_seconds)
    elif intake.transcribe is None:
        return done
    else:
        try:
            async with asyncio.timeout(intake.read_seconds):
                text = (await intake.transcribe(data, name=file.name,
                                                media_type=file.media_type)).strip()
        except TimeoutError:
            text = None
        except Exception as exc:  # the audio is still kept; the turn says it is not heard
            bound.warning("files.transcription_failed", error=str(exc))
            return done  # not kept as read: answering the turn again tries again
    if text is not None or not transcribed:  # a slow speech endpoint may be quick next time
        text = text if text is not None else _out_of_time(file, intake, bound)
        await intake.store.describe(file.sha256, text)
        return replace(done, text=text, transcribed=transcribed)
    return replace(done, text=_out_of_time(file, intake, bound))


def _out_of_time(file: TurnFile, intake: FileIntake, bound: Any) -> str:
    bound.warning("files.read_out_of_time", read_seconds=intake.read_seconds)
    what = "voice message" if file.kind == "audio" else "document"
    return f"the {what} {file.name} could not be read in time"
