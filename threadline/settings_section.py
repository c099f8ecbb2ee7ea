"""The base of every settings section: unknown keys refused, values frozen, and each field's
docstring kept as its description (what `docs/config.md` and errors show)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

KeyPath = tuple[str | int, ...]  # where a value sits in the config: ("agents", "support", ...)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
