"""The LLM judge: a model the operator names grades a case's replies against a rubric.

The judge is asked `runs` times (at once); each run answers a JSON object `{"grade": "pass" or
"fail", "reason": "..."}` and its reason is kept. The check holds when the share of runs that
said pass reaches `pass_share`, so a judge that wavers shows as a share (2/3) rather than as a
case that passes one day and fails the next. A run that fails (the model refused, answered
429, or answered something that is no grade) counts as a fail, with what happened as reason.
"""

from __future__ import annotations

import asyncio
import json
import re

import structlog

from threadline.agents.llm import ModelRequest
from threadline.config import Settings
from threadline.errors import ConfigError
from threadline.evals.cases import Case, JudgeRubric
from threadline.evals.checks import Check, Grade
from threadline.evals.running import Answered
from threadline.history.prompt import PromptMessage
from threadline.provider_setup import Providers, provider_named

log = structlog.get_logger("threadline.evals")

JUDGE_SYSTEM = (
    "You grade the reply of a chat assistant against a rubric. Read the conversation, the "
    "reply and the rubric, then answer with one JSON object and nothing else: "
    '{"grade": "pass" or "fail", "reason": "one sentence saying why"}.')
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def conversation_text(case: Case) -> str:
    """The case's conversation as the judge reads it."""
    if case.turn is not None:
        return str(case.turn.get("content", ""))
    return "\n".join(f"{said.speaker}: {said.text}" for said in case.conversation)


async def judge(rubric: JudgeRubric, case: Case, answered: Answered, *,
                settings: Settings) -> Check:
    """The judge's check for one case's replies (see the module docstring)."""
    choice = provider_named(settings, rubric.provider, ("expect", "judge", "provider"))
    model = rubric.model or choice.settings.model or choice.plug.default_model
    if model is None:
        raise ConfigError(f"case {case.name!r}: judge.model is needed (provider "
                          f"{choice.entry!r} has no default model)")
    provider = Providers(settings).build(choice)
    replies = "\n".join(f"{r.agent}: {r.text}" for r in answered.replies) or "(no reply)"
    request = ModelRequest(model=model, system=JUDGE_SYSTEM, max_tokens=400, thinking="off",
                           messages=(PromptMessage(role="user", content=(
                               f"Conversation:\n{conversation_text(case)}\n\nReply:\n{replies}"
                               f"\n\nRubric:\n{rubric.rubric}")),))

    async def one_run() -> Grade:
        try:
            response = await provider.complete(request)
        except Exception as exc:  # a judge that fails is a failed run, not a failed eval
            log.warning("eval.judge_failed", case=case.name, model=model, error=repr(exc))
            return Grade(False, f"the judge could not answer: {exc}")
        return read_grade(response.text)

    grades = tuple(await asyncio.gather(*(one_run() for _ in range(rubric.runs))))
    passes = sum(g.passed for g in grades)
    share = passes / len(grades)
    reasons = "; ".join(dict.fromkeys(g.reason for g in grades))
    return Check(f"judge {model}: {rubric.rubric}", share >= rubric.pass_share,
                 f"{passes}/{len(grades)} runs pass ({share:.0%}, needs "
                 f"{rubric.pass_share:.0%}): {reasons}", share=share, grades=grades)


def read_grade(text: str) -> Grade:
    """A judge's answer as a grade; an answer that is no grade is a fail saying so."""
    found = _OBJECT.search(text)
    try:
        data = json.loads(found.group(0)) if found else None
    except ValueError:
        data = None
    grade = str(data.get("grade", "")).strip().lower() if isinstance(data, dict) else ""
    if grade not in ("pass", "fail"):
        return Grade(False, f"the judge answered no grade: {text.strip()[:200]!r}")
    assert isinstance(data, dict)
    return Grade(grade == "pass", str(data.get("reason") or "(no reason given)"))
