"""The demo's canned answers never hand the turn on by quoting: the offline model quotes
earlier lines without their @mentions, and never quotes its own canned answers (a quote of a
quote used to carry an @mention out of its quotation marks, so agents answered each other)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.cli.helpers import run_process

SCRIPT = """\
@support my order is 4417-B, ask @billing about the invoice
@billing did I pay for 4417-B?
@support what was my order number?
@billing and the invoice, ask @support?
"""


async def test_only_the_person_and_an_ask_address_an_agent(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_text(SCRIPT, encoding="utf-8")
    outcome = await asyncio.to_thread(run_process, "demo", "--script", "lines.txt", "--db",
                                      str(tmp_path / "demo.db"), cwd=tmp_path)
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    addressed = [line.strip().removeprefix("addressed: ") for line in lines
                 if line.strip().startswith("addressed: ")]
    # Each line's own mentions, then the one agent its `ask @name` hands the turn to.
    assert addressed == ["support, billing, billing", "billing", "support",
                         "support, billing, support"]
    quotes = [line for line in lines if "Earlier in this conversation:" in line
              or "The newest message says:" in line]
    assert quotes
    for quote in quotes:
        quoted = quote.split(": ", 2)[-1]
        assert "@" not in quoted and quoted.count("[offline model]") <= 1, quote
