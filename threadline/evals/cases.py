"""Eval cases as the operator writes them in YAML (`load_cases`), validated before anything runs.

    cases:
      - name: remembers the order number
        conversation:                    # run turn by turn through the team, as in a channel
          - ada: my order number is 4417
          - billing: Your invoice is on its way.       # a configured agent's name: its turn
          - {ada: "@support what was my order number?", files: [receipt.pdf]}
        expect:                          # held against the replies to the last turn
          contains: ["4417"]
          not_contains: ["sorry"]
          matches: ["\\b4417\\b"]
          answered_by: [support]
          tools: [{name: conversation_search, arguments: {limit: 3}}]
          isolated: true                 # nothing of another conversation or person shows
          max_tokens: 4000
          max_latency_ms: 5000
          judge: {rubric: "Gives the order number.", provider: grader, runs: 3, pass_share: 0.66}

A case captured from a reply record (`threadline eval capture`) holds the stored turns
instead (`history`, the answered `turn`, and the agents it goes `to`), so the agent sees the
very prompt it saw then. Paths of files are relative to the cases file.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, Self

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from threadline.errors import ConfigError
from threadline.settings_section import Section

_SAID_KEYS = frozenset({"files"})


class Said(Section):
    """One turn of a case's conversation: who said it (a person, or an agent of the config),
    its text, and the files sent with it."""

    speaker: str
    text: str
    files: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        """`{ada: text}` (and `files:` beside it) reads as {speaker: ada, text: text}."""
        if isinstance(value, dict) and "speaker" not in value:
            names = [k for k in value if k not in _SAID_KEYS]
            if len(names) != 1:
                raise ValueError("write each turn as {NAME: text} (optionally with files: "
                                 f"[...]); got the keys {', '.join(map(str, value)) or 'none'}")
            return {"speaker": names[0], "text": value[names[0]], "files": value.get("files", [])}
        return value


class ToolCallExpected(Section):
    """A tool the agent must have called, with (at least) these arguments."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class JudgeRubric(Section):
    """A model grades the reply against `rubric`; run `runs` times, it passes when at least
    `pass_share` of the runs say pass (a judge that wavers shows as a share)."""

    rubric: str
    provider: str | None = None  # a providers: entry or a provider type (default: model:)
    model: str | None = None  # default: the provider's default model
    runs: int = Field(default=1, ge=1, le=20)
    pass_share: float = Field(default=1.0, gt=0, le=1)


class Expect(Section):
    """What the replies to a case's last turn must show."""

    contains: list[str] = Field(default_factory=list)
    not_contains: list[str] = Field(default_factory=list)
    matches: list[str] = Field(default_factory=list)  # regular expressions (Python `re`)
    answered_by: list[str] | None = None  # exactly these agents answered
    tools: list[ToolCallExpected] = Field(default_factory=list)
    isolated: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    max_latency_ms: float | None = Field(default=None, gt=0)
    judge: JudgeRubric | None = None

    @field_validator("contains", "not_contains", "matches", "answered_by", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("matches")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"/{pattern}/ is not a regular expression ({exc})") from exc
        return patterns


class Case(Section):
    """One case: a conversation to run (or stored turns to replay) and what to expect."""

    name: str
    conversation: list[Said] = Field(default_factory=list)
    history: list[dict[str, Any]] = Field(default_factory=list)  # stored turns, as captured
    turn: dict[str, Any] | None = None  # the captured turn to answer
    to: list[str] = Field(default_factory=list)  # the agents that answer it
    captured_from: str | None = None  # the reply record it was captured from
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if self.turn is None and not self.conversation:
            raise ValueError("give a conversation: (the turns to run), or the history:, turn: "
                             "and to: of a captured case")
        if self.turn is not None and (self.conversation or not self.to):
            raise ValueError("a captured case has history:, turn: and to: (the agents that "
                             "answer it), and no conversation:")
        return self


class CaseFile(Section):
    cases: list[Case] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        names = [c.name for c in self.cases]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"case names must differ: {', '.join(twice)} is used twice")
        return self


def load_cases(path: Path) -> list[Case]:
    """The cases of a YAML file; a `ConfigError` says what is wrong, where."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the cases ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    if isinstance(raw, list):
        raw = {"cases": raw}
    try:
        return CaseFile.model_validate(raw).cases
    except ValidationError as exc:
        problems = "; ".join(f"{_where(raw, e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from exc


def _where(raw: Any, loc: tuple[Any, ...]) -> str:
    """A validation error's place, naming the case rather than its index."""
    parts = [str(p) for p in loc]
    if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
        with contextlib.suppress(KeyError, IndexError, TypeError):
            parts[1] = repr(raw["cases"][loc[1]]["name"])
    return ".".join(parts) or "(file)"


def case_yaml(cases: list[Case]) -> str:
    """Cases as YAML a person edits (what `capture` writes)."""
    data = {"cases": [c.model_dump(exclude_defaults=True) for c in cases]}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
