"""Files that come with a turn: what was sent (kind, type, size, hash) and how a model sees it.

A turn's files are kept on the turn itself (`metadata.extra["files"]`, a list of
`TurnFile.as_dict()`), so export, import, redelivery and the inbox carry them as they carry the
turn; the bytes live apart, once per hash (`threadline.history.file_store`).

The type is read from the bytes (magic numbers), never from the name or the platform's claim: a
PNG named `invoice.pdf` is a picture. Image sizes are read from the PNG/JPEG/GIF/WebP header, so
an image's prompt cost can be counted as the provider counts it without decoding it.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

FileKind = Literal["image", "document", "audio", "other"]

FILES_KEY = "files"

_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_TEXT_TYPES = ("text/plain", "text/markdown", "text/csv")


@dataclass(frozen=True, slots=True)
class TurnFile:
    """One file sent with a turn: its identity (sha256), what it is, and what it says.

    `text` is what the prompt shows for it (a document's extracted text, a voice note's
    transcript); `note` says why it was not taken (over the limit, a refused type, a failed
    download) so the answer can say so. A file with a note has no stored bytes. `unread`: kept,
    but not read yet (reading waits until the platform is acknowledged).
    """

    name: str
    media_type: str = ""
    size: int = 0
    sha256: str = ""
    platform_id: str = ""
    width: int = 0
    height: int = 0
    text: str = ""
    transcribed: bool = False
    unread: bool = False
    note: str = ""

    @property
    def kind(self) -> FileKind:
        return kind_of(self.media_type)

    @property
    def kept(self) -> bool:
        return bool(self.sha256) and not self.note

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", 0, False)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TurnFile:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in raw.items() if k in names})

    def prompt_line(self) -> str:
        """How the prompt names this file in the turn's text (the image itself travels apart)."""
        if self.note:
            return f"[file {self.name} not taken: {self.note}]"
        if self.kind == "image":
            size = f", {self.width}x{self.height}" if self.width else ""
            return f"[image {self.name}{size}]"
        if self.unread:
            return f"[{'audio' if self.kind == 'audio' else 'document'} {self.name}, not read yet]"
        if self.kind == "audio":
            if self.transcribed:
                return f"[voice message {self.name}, transcribed]"
            return f"[audio {self.name}, not transcribed{': ' + self.text if self.text else ''}]"
        if self.text:
            return f"[document {self.name}]\n{self.text}"
        return f"[file {self.name}, {self.media_type}, {self.size:,} bytes]"


@dataclass(frozen=True, slots=True)
class ToolFile:
    """A file a tool made (a chart, an export): returned by the tool, it is kept, named to
    the model, and uploaded with the agent's reply on the platform."""

    name: str
    data: bytes


def files_of(extra: Mapping[str, Any]) -> tuple[TurnFile, ...]:
    """The files a turn's `metadata.extra` records (none for a turn without files)."""
    return tuple(TurnFile.from_dict(raw) for raw in extra.get(FILES_KEY) or ())


def kept_files(messages: Iterable[Any]) -> list[TurnFile]:
    """The kept files these turns name, in order, each hash once."""
    seen: dict[str, TurnFile] = {}
    for message in messages:
        for file in files_of(message.metadata.extra):
            if file.kept:
                seen.setdefault(file.sha256, file)
    return list(seen.values())


def files_extra(files: Sequence[TurnFile]) -> dict[str, Any]:
    """The `metadata.extra` entry recording `files`."""
    return {FILES_KEY: [f.as_dict() for f in files]} if files else {}


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def kind_of(media_type: str) -> FileKind:
    if media_type in _IMAGE_TYPES:
        return "image"
    if media_type.startswith("audio/"):
        return "audio"
    if media_type in (*_TEXT_TYPES, "application/pdf"):
        return "document"
    return "other"


def sniff(data: bytes, name: str = "") -> str:
    """The media type the bytes are, whatever the name says; text types by name only once the
    bytes are known to be UTF-8 text (Markdown and CSV have no magic number)."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    if head[4:8] == b"ftyp" and head[8:11] in (b"M4A", b"mp4", b"iso"):
        return "audio/mp4"
    if b"\x00" not in data[:4096]:
        try:
            data[:65536].decode("utf-8")
        except UnicodeDecodeError:
            return "application/octet-stream"
        lowered = name.lower()
        if lowered.endswith((".md", ".markdown")):
            return "text/markdown"
        if lowered.endswith(".csv"):
            return "text/csv"
        return "text/plain"
    return "application/octet-stream"


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from an image's header; (0, 0) when the header does not say."""
    if data.startswith(b"\x89PNG") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[12:16] == b"VP8X" and len(data) >= 30:
        return (1 + int.from_bytes(data[24:27], "little"),
                1 + int.from_bytes(data[27:30], "little"))
    return 0, 0


def _jpeg_size(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return 0, 0
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return int(width), int(height)
        at += 2 + length
    return 0, 0


def image_tokens(width: int, height: int) -> int:
    """An image's prompt tokens as Anthropic counts them (width x height / 750, after the
    API scales the long side to at most 1568 pixels); 1,600 when the size is unknown."""
    if not width or not height:
        return 1_600
    scale = min(1.0, 1568 / max(width, height))
    return max(1, int(width * scale) * int(height * scale) // 750)


def file_record(file: TurnFile, data: bytes) -> dict[str, Any]:
    """A kept file as an export line's fields (its bytes in base64), for people and history
    exports alike."""
    return {"sha256": file.sha256, "name": file.name, "media_type": file.media_type,
            "size": len(data), "data_base64": base64.b64encode(data).decode("ascii")}


def file_from_record(raw: Mapping[str, Any]) -> tuple[str, str, bytes]:
    """(sha256, media type, bytes) of an export's file line; ValueError when the bytes are not
    the file the line names."""
    data = base64.b64decode(raw["data_base64"], validate=True)
    if sha256_of(data) != raw["sha256"]:
        raise ValueError(f"the bytes of file {raw.get('name')!r} do not match its sha256")
    return str(raw["sha256"]), str(raw["media_type"]), data
