"""What a case expects, checked against what its run produced: one `Check` per expectation,
each saying what was looked for and what was found, so a failure reads without the log."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from threadline.evals.cases import Expect, ToolCallExpected
from threadline.evals.running import Answered


@dataclass(frozen=True, slots=True)
class Grade:
    """One judge run: pass or fail, and the judge's reason."""

    passed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation: its name, whether it held, and what was found."""

    name: str
    passed: bool
    detail: str = ""
    share: float | None = None  # a judge's: the share of its runs that said pass
    grades: tuple[Grade, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "passed": self.passed, "detail": self.detail}
        if self.share is not None:
            found["share"] = self.share
            found["grades"] = [{"passed": g.passed, "reason": g.reason} for g in self.grades]
        return found


def replies_text(answered: Answered) -> str:
    return "\n".join(r.text for r in answered.replies)


def checks_for(expect: Expect, answered: Answered) -> list[Check]:
    """Every expectation but the judge's, in the order they are written in `Expect`."""
    text = replies_text(answered)
    checks: list[Check] = []
    if not answered.replies and expect.answered_by != []:
        checks.append(Check("an agent answered", False, "no agent answered the last turn"))
    checks += [Check(f"contains {s!r}", s in text, _quoted(text)) for s in expect.contains]
    checks += [Check(f"does not contain {s!r}", s not in text, _quoted(text))
               for s in expect.not_contains]
    checks += [Check(f"matches /{p}/", re.search(p, text) is not None, _quoted(text))
               for p in expect.matches]
    if expect.answered_by is not None:
        answered_by = sorted({r.agent for r in answered.replies})
        checks.append(Check(f"answered by {', '.join(sorted(expect.answered_by)) or 'nobody'}",
                            answered_by == sorted(set(expect.answered_by)),
                            f"answered by {', '.join(answered_by) or 'nobody'}"))
    calls = [(name, arguments) for r in answered.replies for name, arguments in r.tool_calls]
    checks += [_tool_check(wanted, calls) for wanted in expect.tools]
    if expect.isolated:
        checks.append(_isolation(answered))
    if expect.max_tokens is not None:
        tokens = sum(r.tokens for r in answered.replies)
        checks.append(Check(f"at most {expect.max_tokens} tokens", tokens <= expect.max_tokens,
                            f"{tokens} tokens"))
    if expect.max_latency_ms is not None:
        slowest = max((r.latency_ms for r in answered.replies), default=0.0)
        checks.append(Check(f"answered within {expect.max_latency_ms:g} ms",
                            slowest <= expect.max_latency_ms, f"{slowest:.0f} ms"))
    return checks


def _tool_check(wanted: ToolCallExpected, calls: list[tuple[str, dict[str, Any]]]) -> Check:
    shown = json.dumps(wanted.arguments, sort_keys=True, ensure_ascii=False)
    name = f"called {wanted.name}" + (f" with {shown}" if wanted.arguments else "")
    held = any(n == wanted.name and _includes(arguments, wanted.arguments)
               for n, arguments in calls)
    made = "; ".join(f"{n}({json.dumps(a, sort_keys=True, ensure_ascii=False)})"
                     for n, a in calls) or "no tool calls"
    return Check(name, held, made)


def _includes(actual: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Every wanted argument is there with that value (others may be there too)."""
    return all(key in actual and actual[key] == value for key, value in wanted.items())


def _isolation(answered: Answered) -> Check:
    marker = answered.decoy or ""
    leaked = [r.agent for r in answered.replies
              if marker and (marker in r.text or any(marker in p for p in r.prompt))]
    return Check("nothing of another conversation or person", not leaked,
                 f"another person's turn elsewhere reached {', '.join(leaked)}" if leaked
                 else "another person's turn elsewhere reached no reply or prompt")


def _quoted(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return f"reply: {flat[:limit]!r}" + ("..." if len(flat) > limit else "")
