"""Speech to text for voice notes: an OpenAI-compatible `/audio/transcriptions` endpoint.

Off unless the config names one (`files.speech`); a local whisper server speaking the same
route works as well as a hosted one. The OpenAI SDK does the request (multipart, retries).
"""

from __future__ import annotations


class SpeechToText:
    """Transcribes audio through `base_url`'s `/audio/transcriptions` with `model`."""

    def __init__(self, *, base_url: str, model: str = "whisper-1", api_key: str = "none",
                 timeout: float = 60.0) -> None:
        # Imported here: the SDK takes most of a second to import, and every `threadline`
        # command imports this module whether or not the config names a speech endpoint.
        from openai import AsyncOpenAI

        self.model = model
        self.client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout,
                                  max_retries=1)

    async def __call__(self, data: bytes, *, name: str, media_type: str) -> str:
        result = await self.client.audio.transcriptions.create(
            model=self.model, file=(name, data, media_type), response_format="text")
        return result if isinstance(result, str) else str(getattr(result, "text", result))
