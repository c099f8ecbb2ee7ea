"""File settings: where people's files are kept, how large, and speech to text (`files:`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    Field,
)

from threadline.settings_section import Section


class SpeechSettings(Section):
    """Speech to text for voice notes: an OpenAI-compatible `/audio/transcriptions` endpoint
    (a hosted one, or a local whisper server). The key is read from `api_key_env`."""

    base_url: str
    """The endpoint's base URL (…/v1); /audio/transcriptions is added."""
    model: str = "whisper-1"
    """The transcription model's name."""
    api_key_env: str | None = None
    """The environment variable holding the endpoint's key (none: no key is sent)."""


class FilesSettings(Section):
    """Files people send (pictures, documents, voice): kept with their turn. Bytes up to
    `inline_max_bytes` are in the database, larger ones in `directory`. A file over a
    channel's `max_file_mb` (`max_file_mb_for: {channel: MB}` per channel) is refused with a
    note and the message's text still answered. Voice notes are transcribed only with
    `speech` set."""

    enabled: bool = True
    """Keep files sent with turns (off: only their text is answered)."""
    directory: str = "threadline-files"
    """The folder files over inline_max_bytes are written to."""
    inline_max_bytes: int = Field(default=256 * 1024, ge=0)
    """Files up to this many bytes are kept in the database itself."""
    max_file_mb: float = Field(default=20, gt=0)
    """The largest file kept, in MB; a larger one is refused with a note."""
    max_file_mb_for: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    """A different largest file per channel name, in MB."""
    speech: SpeechSettings | None = None
    """Speech to text for voice notes (none: voice notes are not transcribed)."""
