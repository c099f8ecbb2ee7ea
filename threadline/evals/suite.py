"""Cases run against one config or two, in parallel within a limit: the results a report reads.

Every case of the file runs against each config given (the current one, and the one
`--against` names for an A/B comparison); at most `parallel` cases run at once, each in a store
of its own (`running`). A case that cannot run (a file it names is missing, the model keeps
refusing) is a result with its error, never the end of the others. Progress is logged as each
case finishes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from threadline.config import Settings
from threadline.errors import ThreadlineError
from threadline.evals.cases import Case
from threadline.evals.checks import Check, checks_for
from threadline.evals.judge import judge
from threadline.evals.running import Answered, FreshStores, answer_case

log = structlog.get_logger("threadline.evals")

CASE_TIMEOUT = 300.0  # seconds one case may take against one config, judge included


@dataclass(frozen=True, slots=True)
class Config:
    """One config a suite runs against, with the label reports give it (its file name)."""

    label: str
    settings: Settings


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case against one config: the replies, each check, or why it could not run."""

    case: str
    config: str
    answered: Answered | None
    checks: tuple[Check, ...] = field(default=())
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.passed for c in self.checks)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.answered.replies) if self.answered else 0

    @property
    def cost(self) -> float | None:
        """US dollars (None: no reply had a price in `spend.prices`)."""
        costs = [r.cost for r in self.answered.replies if r.cost is not None] if (
            self.answered) else []
        return sum(costs) if costs else None

    def as_dict(self) -> dict[str, Any]:
        replies = self.answered.replies if self.answered else ()
        return {
            "case": self.case, "config": self.config, "passed": self.passed,
            "error": self.error, "seconds": self.answered.seconds if self.answered else 0.0,
            "tokens": self.tokens, "cost_usd": self.cost,
            "replies": [{"agent": r.agent, "text": r.text, "input_tokens": r.input_tokens,
                         "output_tokens": r.output_tokens, "latency_ms": r.latency_ms,
                         "cost_usd": r.cost,
                         "tool_calls": [{"name": n, "arguments": a} for n, a in r.tool_calls]}
                        for r in replies],
            "checks": [c.as_dict() for c in self.checks],
        }


Progress = Callable[[CaseResult, int, int], None]  # a finished case, how many are done, of


async def run_suite(cases: Sequence[Case], configs: Sequence[Config], *, cases_dir: Path,
                    parallel: int = 4, case_seconds: float = CASE_TIMEOUT,
                    progress: Progress | None = None) -> list[CaseResult]:
    """Every case against every config, in case order then config order; `progress` hears
    of each case as it finishes."""
    limit = asyncio.Semaphore(max(1, parallel))
    total = len(cases) * len(configs)
    done = 0

    async def one(case: Case, config: Config, stores: FreshStores) -> CaseResult:
        nonlocal done
        async with limit:
            result = await run_case(case, config, cases_dir=cases_dir, stores=stores,
                                    case_seconds=case_seconds)
        done += 1
        log.info("eval.case_done", case=case.name, config=config.label, passed=result.passed,
                 progress=f"{done}/{total}")
        if progress is not None:
            progress(result, done, total)
        return result

    async with FreshStores() as stores:
        return list(await asyncio.gather(*(one(case, config, stores) for case in cases
                                           for config in configs)))


async def run_case(case: Case, config: Config, *, cases_dir: Path,
                   stores: FreshStores | None = None,
                   case_seconds: float = CASE_TIMEOUT) -> CaseResult:
    """One case against one config, its expectations checked (the judge's last); a case
    still running after `case_seconds` (a model that never answers) is stopped."""
    try:
        async with asyncio.timeout(case_seconds):
            answered = await answer_case(case, config.settings, cases_dir=cases_dir,
                                         stores=stores)
            checks = checks_for(case.expect, answered)
            if case.expect.judge is not None:
                checks.append(await judge(case.expect.judge, case, answered,
                                          settings=config.settings))
    except TimeoutError:
        error = f"did not finish within {case_seconds:g} s (raise --timeout for slow models)"
        log.warning("eval.case_timed_out", case=case.name, config=config.label)
        return CaseResult(case.name, config.label, None, error=error)
    except (ThreadlineError, OSError) as exc:
        log.warning("eval.case_failed", case=case.name, config=config.label, error=str(exc))
        return CaseResult(case.name, config.label, None, error=str(exc))
    return CaseResult(case.name, config.label, answered, tuple(checks))
