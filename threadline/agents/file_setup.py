"""The files section of the config, built: where each channel keeps files and how it hears voice."""

from __future__ import annotations

import os

from threadline.agents.speech import SpeechToText
from threadline.channels.files import FileIntake
from threadline.errors import ConfigError
from threadline.history.file_store import FileStore


def file_intakes(files: FileStore, *, max_file_mb: float, max_file_mb_for: dict[str, float],
                 channels: list[str], speech_url: str | None, speech_model: str,
                 speech_key_env: str | None,
                 ) -> tuple[FileIntake, dict[str, FileIntake]]:
    """The team's intake and each channel's own (its size limit), sharing one store (the
    backend's `files` part)."""
    transcribe = None
    if speech_url:
        key = os.environ.get(speech_key_env, "") if speech_key_env else "none"
        if speech_key_env and not key:
            raise ConfigError(f"files.speech.api_key_env names {speech_key_env!r}, which is "
                              "not set; set it or remove api_key_env")
        transcribe = SpeechToText(base_url=speech_url, model=speech_model, api_key=key)
    unknown = sorted(set(max_file_mb_for) - set(channels))
    if unknown:
        raise ConfigError(f"files.max_file_mb_for names {', '.join(unknown)}, which are not "
                          f"channels of this config ({', '.join(channels)})")
    team = FileIntake(store=files, max_file_bytes=int(max_file_mb * 1_048_576),
                      transcribe=transcribe)
    own = {name: FileIntake(store=files, max_file_bytes=int(mb * 1_048_576),
                            transcribe=transcribe) for name, mb in max_file_mb_for.items()}
    return team, own
