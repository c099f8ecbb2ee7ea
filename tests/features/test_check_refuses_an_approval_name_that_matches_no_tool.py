"""`require_approval` names mean one thing: an MCP tool by its own name (`add`), as
`server/tool` or as the model sees it (`calc__add`) holds the call (see
`test_mcp_tools_survive_a_restart.py`), and `threadline check` fails a name that matches no
tool, with the names it could have meant: such a call would otherwise run unasked."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.agents.mcp_servers import ROOT
from tests.cli.helpers import run_process


def config(tmp_path: Path, names: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
ops:
  enabled: false
channels:
  local:
    type: local
    stdin: false
agents:
  support:
    channels: [local]
    mcp:
      allow: [calc]
    require_approval: [{names}]
mcp_servers:
  calc:
    command: {sys.executable}
    args: [-m, tests.fakes.mcp_server, stdio]
    env: {{PYTHONPATH: "{ROOT}"}}
    cwd: {ROOT}
""", encoding="utf-8")
    return path


def test_every_way_of_naming_a_tool_passes_and_a_name_of_nothing_fails(tmp_path: Path) -> None:
    passed = run_process("check", str(config(tmp_path, "add, calc/shout, calc__slow")),
                         cwd=tmp_path)
    assert "ok    agent support require_approval: 3 tool(s) wait for approval" in passed.out, (
        passed.out + passed.err)

    failed = run_process("check", str(config(tmp_path, "add, refund")), cwd=tmp_path)
    assert failed.code == 1
    [line] = [x for x in failed.err.splitlines() if "require_approval" in x]
    assert line.startswith("FAIL  agent support require_approval: require_approval: "
                           "'refund' names no tool (tools: ")
    assert "calc/add" in line and "a call to it would not wait for approval" in line
