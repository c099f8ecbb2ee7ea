"""`mcp_servers:` in the YAML: checked like the rest of the config, and by `threadline check`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.agents.mcp_servers import ROOT
from tests.cli.helpers import run_process_async
from tests.ports import free_port
from threadline.config import load_settings
from threadline.errors import ConfigError


def write(tmp_path: Path, servers: str, agent_mcp: str = "") -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
model:
  provider: offline
ops:
  port: 0  # `check` tries the ops port: the default one may be a running bot's
mcp_servers:
{servers}
agents:
  support:
    channels: [local]
{agent_mcp}
""", encoding="utf-8")
    return path


STDIO = f"""\
  calc:
    command: {sys.executable}
    args: [-m, tests.fakes.mcp_server, stdio]
    cwd: {ROOT}
    env: {{PYTHONPATH: {ROOT}}}
"""


def test_allow_and_deny_must_name_configured_servers(tmp_path: Path) -> None:
    path = write(tmp_path, STDIO, "    mcp:\n      allow: [calc, search/find]\n"
                                  "      deny: [calc/delete_everything]\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert "agents.support.mcp.allow" in str(caught.value)
    assert "'search/find' names no configured MCP server (servers: calc)" in str(caught.value)


def test_a_server_is_a_command_or_a_url_and_secrets_come_from_the_environment(
        tmp_path: Path) -> None:
    both = write(tmp_path, "  calc:\n    command: x\n    url: http://127.0.0.1:1/mcp\n")
    with pytest.raises(ConfigError, match=r"set `command:` .* or `url:`"):
        load_settings(both)
    literal = write(tmp_path, "  remote:\n    url: http://127.0.0.1:1/mcp\n"
                              "    oauth:\n      client_id: threadline\n"
                              "      client_secret: hunter2\n")
    with pytest.raises(ConfigError, match="literal secret is not allowed"):
        load_settings(literal)
    referenced = write(tmp_path, "  remote:\n    url: http://127.0.0.1:1/mcp\n"
                                 "    token: ${REMOTE_MCP_TOKEN}\n")
    settings = load_settings(referenced, env={"REMOTE_MCP_TOKEN": "s3cret"})
    assert settings.mcp_servers["remote"].token == "s3cret"


async def test_check_lists_a_working_servers_tools_and_fails_for_one_that_is_down(
        tmp_path: Path) -> None:
    # The first refused connect must fall within connect_timeout, which includes the child's
    # import of the MCP client: 2 s was too short on a loaded machine ("not connected yet").
    down = f"  down:\n    url: http://127.0.0.1:{free_port()}/mcp\n    connect_timeout: 8\n"
    path = write(tmp_path, STDIO + down, "    mcp:\n      allow: [calc]\n")

    outcome = await run_process_async("check", str(path), "--timeout", "20", cwd=tmp_path)

    assert outcome.code == 1
    assert "ok    mcp server calc: 6 tool(s): add, add_tool, big_report" in outcome.out
    assert "FAIL  mcp server down: ConnectError: All connection attempts failed" in outcome.err
