"""`docs/tools.md` is true: its example tool, written to a module beside a config and loaded
by reference as `threadline run` loads it, has exactly the schema the page shows and answers
as the page says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from threadline.config import load_settings
from threadline.runtime import load_tool

PAGE = (Path(__file__).parents[1] / "docs" / "tools.md").read_text(encoding="utf-8")


def block(kind: str) -> str:
    found = re.search(rf"```{kind}\n(.*?)```", PAGE, re.DOTALL)
    assert found is not None, f"no {kind} block in docs/tools.md"
    return found.group(1)


async def test_the_example_tool_has_the_schema_and_answers_the_page_shows(tmp_path: Path) -> None:
    (tmp_path / "shipping.py").write_text(block("python"), encoding="utf-8")
    (tmp_path / "threadline.yaml").write_text(block("yaml"), encoding="utf-8")
    settings = load_settings(tmp_path / "threadline.yaml")
    [reference] = settings.agents["support"].tools
    tool = load_tool(reference, agent="support", settings=settings)
    assert tool.name == "shipping_quote"
    assert tool.description == "What sending a parcel costs and how long it takes."
    assert tool.input_schema == json.loads(block("json"))
    lines = block("text").splitlines()
    for call, answer in zip(lines[::2], lines[1::2], strict=True):
        given = json.loads(call.removeprefix("shipping_quote.run(").removesuffix(")"))
        assert await tool.run(given) == answer.removeprefix("-> ")
