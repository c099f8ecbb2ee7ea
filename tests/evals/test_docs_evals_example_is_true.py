"""docs/evals.md's worked example is what the command prints, run as the page says in `make
demo`'s folder (the milliseconds aside: they are the machine's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from threadline.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "evals.md").read_text(encoding="utf-8")


def text_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)```", PAGE, re.DOTALL)


def without_timings(text: str) -> str:
    return re.sub(r"\d+ ms", "N ms", text)


def test_the_worked_example_prints_what_the_page_shows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    one, two = text_blocks()[:2]
    assert main(["eval", "examples/evals/cases.yaml", "--config",
                 "examples/evals/threadline.yaml"]) == 0
    assert without_timings(capsys.readouterr().out) == without_timings(one)

    no_tool = tmp_path / "no_tool.yaml"
    no_tool.write_text((ROOT / "examples/evals/threadline.yaml").read_text(
        encoding="utf-8").replace("    tools: [shop_tools:track_parcel]\n", ""), encoding="utf-8")
    assert main(["eval", "examples/evals/cases.yaml", "--config",
                 "examples/evals/threadline.yaml", "--against", str(no_tool)]) == 1
    shown = without_timings(two).replace("no_tool.yaml", str(no_tool.name))
    assert shown in without_timings(capsys.readouterr().out)
