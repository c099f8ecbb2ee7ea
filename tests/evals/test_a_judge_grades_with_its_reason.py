"""An LLM-judge rubric: a model the operator names (here a fake Anthropic server, through the
real SDK) grades the reply; each run's grade and reason are reported, and a judge that wavers
is reported as the share of runs that said pass."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from threadline.cli.main import main

model = fake_anthropic_fixture()
CONFIG = """\
model:
  provider: offline
providers:
  grader:
    type: anthropic
    base_url: {url}
    api_key: ${{GRADER_KEY}}
    max_retries: 0
    stream: false
agents:
  support:
    tools: [shop_tools:track_parcel]
    channels: [local]
"""
CASES = """\
cases:
  - name: tracks the parcel
    conversation:
      - ada: '@support use track_parcel {"order": "4417"}'
    expect:
      judge:
        provider: grader
        model: claude-haiku-4-5
        rubric: Says where the parcel of order 4417 is.
        runs: 3
        pass_share: 0.6
  - name: the judge answers no grade
    conversation:
      - ada: "@support hello"
    expect:
      judge: {provider: grader, model: claude-haiku-4-5, rubric: Greets back.}
"""


def grade(verdict: str, reason: str) -> str:
    return json.dumps({"grade": verdict, "reason": reason})


async def test_a_judges_grades_and_reasons_are_reported(
        tmp_path: Path, model: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_KEY", "test-key")
    (tmp_path / "shop_tools.py").write_text(
        (Path(__file__).parents[2] / "examples" / "evals" / "shop_tools.py").read_text())
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.format(url=model.url), encoding="utf-8")
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES, encoding="utf-8")
    model.script(text(grade("pass", "It says order 4417 left the warehouse.")),
                 text("Sure, " + grade("fail", "It never names a place.")),
                 text(grade("pass", "Where it is: it left the warehouse.")),
                 text("I think it is fine."))

    code = await asyncio.to_thread(main, [
        "eval", str(cases), "--config", str(config), "--json", str(tmp_path / "out.json"),
        "--parallel", "1"])
    out = capsys.readouterr().out

    assert code == 1  # the second case's judge gave no grade
    assert "PASS  tracks the parcel" in out
    assert "judge: 2/3 runs pass (67%, needs 60%)" in out
    assert "It says order 4417 left the warehouse." in out and "It never names a place." in out
    assert "FAIL  the judge answers no grade" in out
    assert "the judge answered no grade: 'I think it is fine.'" in out
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["results"]
    [judged] = [c for c in results[0]["checks"] if "share" in c]
    assert judged["passed"] is True and round(judged["share"], 2) == 0.67
    assert sorted((g["passed"], g["reason"]) for g in judged["grades"]) == [
        (False, "It never names a place."), (True, "It says order 4417 left the warehouse."),
        (True, "Where it is: it left the warehouse.")]
    graded = [b for b in model.bodies if b["model"] == "claude-haiku-4-5"]
    assert len(graded) == 4
    assert "Says where the parcel of order 4417 is." in json.dumps(graded[0]["messages"])
    assert "track_parcel said: order 4417 left the warehouse" in json.dumps(
        graded[0]["messages"])


async def test_a_model_that_never_answers_stops_its_case_not_the_run(
        tmp_path: Path, model: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_KEY", "test-key")
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
model:
  provider: anthropic
  base_url: {model.url}
  api_key: ${{GRADER_KEY}}
  max_retries: 0
agents:
  support:
    model: claude-haiku-4-5
    channels: [local]
""", encoding="utf-8")
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - name: stuck\n    conversation:\n      - ada: '@support hi'\n"
                     "    expect: {contains: hi}\n", encoding="utf-8")
    model.script(text("never sent", until=asyncio.Event()))

    code = await asyncio.to_thread(main, ["eval", str(cases), "--config", str(config),
                                          "--timeout", "1"])
    out = capsys.readouterr().out

    assert code == 1
    assert "FAIL  stuck" in out
    assert "could not run: did not finish within 1 s (raise --timeout for slow models)" in out
