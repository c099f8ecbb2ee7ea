"""Splitting long replies for platforms with a length limit; the one place that does it.

Text is cut on paragraph, then line, then sentence, then word boundaries, never inside a word
when avoidable. A code fence open at a cut is closed at the end of the part and reopened (with
its language) at the start of the next, so each part renders on its own.
"""

from __future__ import annotations

import re

from threadline.errors import ConfigError

_FENCE = re.compile(r"^```(\S*)", re.MULTILINE)
_BOUNDARIES = ("\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " ")


def _open_fence(text: str) -> str | None:
    """The language of a code fence left open at the end of `text` ('' for none), else None."""
    language = None
    for match in _FENCE.finditer(text):
        language = match.group(1) if language is None else None
    return language


def _cut(text: str, limit: int) -> int:
    window = text[:limit]
    for boundary in _BOUNDARIES:
        position = window.rfind(boundary)
        if position > limit // 3:
            return position + len(boundary)
    return limit


def split_text(text: str, limit: int) -> list[str]:
    """Parts of `text`, each at most `limit` characters, in order; an empty text gives none."""
    if limit < 20:
        raise ConfigError(f"split_text needs a limit of at least 20 characters, got {limit}")
    parts: list[str] = []
    rest = text.strip()
    reopen = ""
    while rest:
        rest = reopen + rest
        if len(rest) <= limit:
            parts.append(rest)
            break
        # Leave room to close a fence that this part may leave open.
        position = _cut(rest, limit - 4)
        part = rest[:position].rstrip()
        language = _open_fence(part)
        if language is not None:
            part += "\n```"
            reopen = f"```{language}\n"
        else:
            reopen = ""
        parts.append(part)
        rest = rest[position:].lstrip("\n ")
    return [p for p in parts if p.strip()]
