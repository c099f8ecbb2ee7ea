"""`threadline eval` on a file of five cases, offline: pass or fail printed per case, the exit
code CI reads, and the JUnit XML and JSON it writes, each checked against a schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from lxml import etree

from threadline.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
EXAMPLE = ROOT / "examples" / "evals"


def valid_junit(path: Path) -> etree._ElementTree:
    schema = etree.XMLSchema(etree.parse(str(HERE / "junit.xsd")))
    document = etree.parse(str(path))
    schema.assertValid(document)
    return document


def valid_json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    schema = json.loads((HERE / "eval_results.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
    return dict(data)


def test_the_documented_five_cases_pass_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # `make demo`'s folder, as docs/evals.md runs it
    code = main(["eval", "examples/evals/cases.yaml", "--config", "examples/evals/threadline.yaml",
                 "--junit", str(tmp_path / "eval.xml"), "--json", str(tmp_path / "eval.json"),
                 "--parallel", "2"])
    out = capsys.readouterr().out

    assert code == 0, out
    assert out.count("PASS  ") == 5 and "FAIL" not in out
    assert "threadline.yaml: 5/5 passed, $0.006573" in out
    junit = valid_junit(tmp_path / "eval.xml")
    assert junit.getroot().find("testsuite").get("failures") == "0"  # type: ignore[union-attr]
    assert len(junit.findall(".//testcase")) == 5
    results = valid_json(tmp_path / "eval.json")
    assert results["passed"] is True


def test_one_failing_expectation_fails_the_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text((EXAMPLE / "cases.yaml").read_text(encoding="utf-8").replace(
        'contains: "left the warehouse"', 'contains: "was delivered yesterday"'),
        encoding="utf-8")
    code = main(["eval", str(cases), "--config", str(EXAMPLE / "threadline.yaml"),
                 "--junit", str(tmp_path / "eval.xml"), "--json", str(tmp_path / "eval.json")])
    out = capsys.readouterr().out

    assert code == 1
    assert out.count("PASS  ") == 4
    assert "FAIL  support tracks a parcel with its tool" in out
    assert "✗ contains 'was delivered yesterday': reply: '[offline model] track_parcel said" in out
    assert "threadline.yaml: 4/5 passed" in out
    junit = valid_junit(tmp_path / "eval.xml")
    [failure] = junit.findall(".//failure")
    assert failure.getparent().get("name") == "support tracks a parcel with its tool"
    results = valid_json(tmp_path / "eval.json")
    failed = [r for r in results["results"] if not r["passed"]]  # type: ignore[union-attr]
    assert [r["case"] for r in failed] == ["support tracks a parcel with its tool"]


def test_bad_cases_are_refused_with_the_case_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - name: no turns\n    expect: {contains: x}\n", encoding="utf-8")
    code = main(["eval", str(cases), "--config", str(EXAMPLE / "threadline.yaml")])
    err = capsys.readouterr().err

    assert code == 2
    assert "'no turns'" in err and "give a conversation:" in err

    cases.write_text("cases:\n  - name: bad pattern\n    conversation: [{ada: hi}]\n"
                     "    expect: {matches: '(unclosed'}\n", encoding="utf-8")
    assert main(["eval", str(cases), "--config", str(EXAMPLE / "threadline.yaml")]) == 2
    assert "/(unclosed/ is not a regular expression" in capsys.readouterr().err


def test_two_configs_side_by_side_show_what_changed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    without_tool = tmp_path / "without_tool.yaml"
    without_tool.write_text((EXAMPLE / "threadline.yaml").read_text(encoding="utf-8").replace(
        "    tools: [shop_tools:track_parcel]\n", ""), encoding="utf-8")
    code = main(["eval", str(EXAMPLE / "cases.yaml"), "--config",
                 str(EXAMPLE / "threadline.yaml"), "--against", str(without_tool),
                 "--junit", str(tmp_path / "eval.xml")])
    out = capsys.readouterr().out

    assert code == 1  # a case fails under the second config
    assert "PASS (threadline.yaml)  FAIL (without_tool.yaml)  support tracks a parcel" in out
    assert "    changed: PASS -> FAIL" in out
    assert "-support: [offline model] track_parcel said: order 4417 left the warehouse" in out
    assert "+support: [offline model] I have no tool named track_parcel" in out
    assert "threadline.yaml: 5/5 passed, $0.006573; without_tool.yaml: 4/5 passed" in out
    suites = valid_junit(tmp_path / "eval.xml").findall("testsuite")
    assert [(s.get("name"), s.get("failures")) for s in suites] == [
        ("threadline.yaml", "0"), ("without_tool.yaml", "1")]


def test_a_case_sends_a_file_the_agent_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "receipt.txt").write_text("Receipt 9981: one blue teapot, 24 EUR\n",
                                          encoding="utf-8")
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - name: reads a receipt\n    conversation:\n"
                     "      - {ada: '@support here is my receipt', files: [receipt.txt]}\n"
                     "    expect: {contains: 'Receipt 9981: one blue teapot'}\n",
                     encoding="utf-8")
    code = main(["eval", str(cases), "--config", str(EXAMPLE / "threadline.yaml")])
    assert code == 0, capsys.readouterr().out
