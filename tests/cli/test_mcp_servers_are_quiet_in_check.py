"""`threadline check` on MCP servers says one line per server: a wrong `command:` fails at once
(one attempt, no retry warnings), a server's own stderr stays out of the output (it goes to the
debug log), and a server that dies says its last stderr line in its FAIL line."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.agents.mcp_servers import ROOT
from tests.cli.helpers import run_process_async
from tests.cli.test_mcp_servers_config import write

NOISY = f"""\
  calc:
    command: {sys.executable}
    args: [-c, "import runpy, sys; print('NOISE from the server', file=sys.stderr, flush=True);
      sys.argv = ['x', 'stdio']; runpy.run_module('tests.fakes.mcp_server', run_name='__main__')"]
    cwd: {ROOT}
    env: {{PYTHONPATH: {ROOT}}}
"""
WRONG = """\
  files:
    command: no-such-mcp-server-binary
    connect_timeout: 30
"""
DYING = f"""\
  dying:
    command: {sys.executable}
    args: [-c, "import sys; print('starting'); sys.exit('cannot open /srv/files: no such folder')"]
"""


async def test_a_wrong_command_fails_at_once_and_server_noise_stays_out(tmp_path: Path) -> None:
    path = write(tmp_path, NOISY + WRONG + DYING)
    outcome = await run_process_async("check", str(path), "--timeout", "60", cwd=tmp_path,
                                      time_limit=50)
    assert outcome.code == 1
    lines = (outcome.out + outcome.err).splitlines()
    assert any(line.startswith("ok    mcp server calc: ") for line in lines), lines
    [wrong] = [line for line in lines if "mcp server files" in line]
    assert wrong.startswith("FAIL  mcp server files: ") and "no-such-mcp-server-binary" in wrong
    [dying] = [line for line in lines if "mcp server dying" in line]
    assert dying.startswith("FAIL  mcp server dying: ")
    assert "cannot open /srv/files: no such folder" in dying
    assert "NOISE" not in outcome.out + outcome.err
    assert "mcp.server_down" not in outcome.out + outcome.err  # nothing was retried
    assert "Processing request" not in outcome.out + outcome.err
