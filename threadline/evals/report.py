"""What a suite's results say, for a person (`text_report`) and for machines (`junit_xml`,
`json_report`).

The text gives pass or fail per case with each failed check, the tokens, latency and cost of
its replies, and, when two configs ran, what changed between them: the outcome, the replies
(a line diff), the tokens, the size of the prompt the agents saw, and the cost. JUnit XML has
one `testsuite` per config and one `testcase` per case (CI systems read it as tests); the JSON
holds everything, checks and judge grades with their reasons included.
"""

from __future__ import annotations

import difflib
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from threadline.evals.suite import CaseResult

MARK = {True: "PASS", False: "FAIL"}


def text_report(results: Sequence[CaseResult], configs: Sequence[str]) -> str:
    """Pass or fail per case (and per config), with what failed and what changed."""
    lines: list[str] = []
    for case in _case_names(results):
        by_config = {r.config: r for r in results if r.case == case}
        outcome = "  ".join(f"{MARK[by_config[c].passed]}" + (f" ({c})" if len(configs) > 1
                                                              else "") for c in configs)
        lines.append(f"{outcome}  {case}")
        for config in configs:
            result = by_config[config]
            prefix = f"    [{config}] " if len(configs) > 1 else "    "
            lines.append(prefix + _figures(result))
            if result.error is not None:
                lines.append(f"{prefix}could not run: {result.error}")
            lines += [f"{prefix}✗ {c.name}: {c.detail}" for c in result.checks if not c.passed]
            lines += [f"{prefix}judge: {c.detail}" for c in result.checks
                      if c.passed and c.share is not None]
        if len(configs) == 2:
            lines += _changes(by_config[configs[0]], by_config[configs[1]])
    lines.append(_summary(results, configs))
    return "\n".join(lines) + "\n"


def _figures(result: CaseResult) -> str:
    if result.answered is None:
        return "no replies"
    replies = result.answered.replies
    if not replies:
        return "nobody answered"
    agents = ", ".join(r.agent for r in replies)
    slowest = max((r.latency_ms for r in replies), default=0.0)
    cost = f"${result.cost:.6f}" if result.cost is not None else "cost n/a (no spend.prices)"
    return f"{agents}; {result.tokens} tokens, {slowest:.0f} ms, {cost}"


def _changes(before: CaseResult, after: CaseResult) -> list[str]:
    """What differs between the two configs' runs of one case."""
    lines: list[str] = []
    if before.passed != after.passed:
        lines.append(f"    changed: {MARK[before.passed]} -> {MARK[after.passed]}")
    old, new = _replies(before), _replies(after)
    if old != new:
        diff = difflib.unified_diff(old.splitlines(), new.splitlines(), before.config,
                                    after.config, lineterm="", n=1)
        lines += [f"    {line}" for line in diff]
    if before.tokens != after.tokens:
        lines.append(f"    tokens: {before.tokens} -> {after.tokens}")
    seen_before, seen_after = _prompt_parts(before), _prompt_parts(after)
    if seen_before != seen_after:
        lines.append(f"    prompt seen: {seen_before} -> {seen_after} parts")
    if before.cost is not None and after.cost is not None and before.cost != after.cost:
        lines.append(f"    cost: ${before.cost:.6f} -> ${after.cost:.6f}")
    return lines


def _prompt_parts(result: CaseResult) -> int:
    return sum(len(r.prompt) for r in result.answered.replies) if result.answered else 0


def _replies(result: CaseResult) -> str:
    if result.answered is None:
        return ""
    return "\n".join(f"{r.agent}: {r.text}" for r in result.answered.replies)


def _summary(results: Sequence[CaseResult], configs: Sequence[str]) -> str:
    parts = []
    for config in configs:
        mine = [r for r in results if r.config == config]
        passed = sum(r.passed for r in mine)
        cost = [r.cost for r in mine if r.cost is not None]
        spent = f", ${sum(cost):.6f}" if cost else ""
        parts.append(f"{config}: {passed}/{len(mine)} passed{spent}")
    return "; ".join(parts)


def junit_xml(results: Sequence[CaseResult], configs: Sequence[str]) -> str:
    """JUnit XML: a `testsuite` per config, a `testcase` per case, a `failure` per failed
    case (its failed checks), an `error` for a case that could not run."""
    suites = ET.Element("testsuites", name="threadline eval")
    for config in configs:
        mine = [r for r in results if r.config == config]
        suite = ET.SubElement(suites, "testsuite", {
            "name": config, "tests": str(len(mine)),
            "failures": str(sum(1 for r in mine if r.error is None and not r.passed)),
            "errors": str(sum(1 for r in mine if r.error is not None)), "skipped": "0",
            "time": _seconds(sum(_time(r) for r in mine))})
        for result in mine:
            case = ET.SubElement(suite, "testcase", {
                "classname": f"threadline.eval.{config}", "name": result.case,
                "time": _seconds(_time(result))})
            failed = [c for c in result.checks if not c.passed]
            if result.error is not None:
                ET.SubElement(case, "error", message=result.error[:500]).text = result.error
            elif failed:
                ET.SubElement(case, "failure", message="; ".join(c.name for c in failed)[:500]
                              ).text = "\n".join(f"{c.name}: {c.detail}" for c in failed)
            ET.SubElement(case, "system-out").text = _replies(result)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def json_report(results: Sequence[CaseResult], configs: Sequence[str]) -> str:
    summary = {c: {"cases": sum(r.config == c for r in results),
                   "passed": sum(r.config == c and r.passed for r in results)}
               for c in configs}
    data: dict[str, Any] = {"configs": list(configs), "summary": summary,
                            "passed": all(r.passed for r in results),
                            "results": [r.as_dict() for r in results]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _case_names(results: Sequence[CaseResult]) -> list[str]:
    return list(dict.fromkeys(r.case for r in results))


def _time(result: CaseResult) -> float:
    return result.answered.seconds if result.answered is not None else 0.0


def _seconds(value: float) -> str:
    return f"{value:.3f}"
