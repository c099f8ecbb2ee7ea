"""Every secret the config holds is redacted at every exit, before any escaping.

An MCP server's `env:` value (written literally in the YAML, and one written as ${VAR} under a
name that does not look like a credential) that a member pastes and the model repeats is
masked in the reply record, on the console's pages, in `threadline history export` and on the
spans of a content-capturing trace (the fake OTLP receiver). The console's live stream masks a
secret holding `& < > " '` in the page and in the events alike. A malformed Slack token key is
refused without being shown.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.channels.slack.test_slack_oauth_settings import OAUTH, load
from tests.cli.helpers import run_process_async
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.otlp import FakeOtlp
from tests.history.helpers import turn
from threadline.backends import Backend, open_backend
from threadline.channels.local import LocalChannel
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.redaction import Redactor
from threadline.runtime import Runtime

LITERAL = "mcp-literal-&<q7>\"'-9f2c"  # in the YAML as written, with every HTML special
REFERENCED = "mcp-referenced-51d0e7"  # from ${MCP_SERVICE_VALUE}: not named like a key
REPO = Path(__file__).resolve().parents[2]


def config(tmp_path: Path, anthropic: FakeAnthropic, otlp: FakeOtlp) -> Path:
    path = tmp_path / "threadline.yaml"
    literal = json.dumps(LITERAL)  # a YAML double-quoted scalar
    path.write_text(f"""\
store:
  url: sqlite:///{tmp_path / 'threadline.db'}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
ops:
  port: 0
tracing:
  enabled: true
  endpoint: {otlp.url}
  capture_message_content: true
mcp_servers:
  files:
    command: {sys.executable}
    args: [-m, tests.fakes.mcp_server, stdio]
    cwd: {REPO}
    env:
      PYTHONPATH: {REPO}
      FILES_LOGIN: {literal}
      FILES_SERVICE: ${{MCP_SERVICE_VALUE}}
channels:
  local:
    type: local
agents:
  support:
    channels: [local]
""", encoding="utf-8")
    return path


async def test_an_mcp_env_secret_is_redacted_in_records_pages_export_and_traces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("MCP_SERVICE_VALUE", REFERENCED)
    async with FakeOtlp() as otlp, FakeAnthropic() as anthropic:
        anthropic.script(text(f"Noted: {LITERAL} and {REFERENCED}."))
        path = config(tmp_path, anthropic, otlp)
        runtime = Runtime.build(load_settings(path))
        await runtime.start()
        try:
            # Started means the MCP server is up, or said otherwise here.
            assert "feature:mcp" not in await runtime.readiness()
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            await room.say(f"@support the login is {LITERAL}, the service {REFERENCED}",
                           user="ada")
            assert runtime.inspector.recorder is not None
            await runtime.inspector.recorder.flush()
            [record] = await runtime.inspector.records.recent()
            url = runtime.console_url
            assert url is not None
            pages = {}
            async with aiohttp.ClientSession() as session:
                for page in ("conversation?id=local:main", f"records/{record.id}",
                             "api/conversation?id=local:main", f"api/records/{record.id}"):
                    async with session.get(url + page) as response:
                        assert response.status == 200, page
                        pages[page] = await response.text()
        finally:
            await runtime.stop()
        exported = await run_process_async(
            "history", "export", "--config", str(path), cwd=tmp_path,
            env={"MCP_SERVICE_VALUE": REFERENCED, "ANTHROPIC_API_KEY": "test-key"})

    # The model saw them (the history is not redacted), so redaction had work to do.
    assert "q7" in str(anthropic.bodies[0]) and REFERENCED in str(anthropic.bodies[0])
    with sqlite3.connect(tmp_path / "threadline.db") as connection:
        records = repr(connection.execute("SELECT * FROM threadline_reply_records").fetchall())
    assert exported.code == 0, exported.err
    spans = json.dumps([[s.name, s.attributes, s.events] for s in otlp.spans],
                       ensure_ascii=False, default=str)
    assert "gen_ai.input.messages" in spans and "[redacted]" in spans  # content was captured
    exits = {"record": records, "export": exported.out, "trace": spans, **pages}
    for where, shown in exits.items():
        assert "[redacted]" in shown, where
        for secret in (LITERAL, REFERENCED):
            assert secret not in shown, (where, secret)
        assert "q7" not in shown and "51d0e7" not in shown, where  # in no escaped form


ESCAPABLE = "pw&<zq9f7e>'\"x"  # HTML escaping changes it: redacted before, or not at all


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Backend]]:
    async with open_backend(f"sqlite:///{tmp_path / 'c.db'}") as backend:
        assert backend.records is not None
        app = console_app(records=backend.records, store=backend.history,
                          redactor=Redactor([ESCAPABLE]))
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/console", backend
        finally:
            await runner.cleanup()


@pytest.mark.parametrize("path", ["conversation/live", "api/conversation/live"])
async def test_the_live_stream_redacts_a_secret_with_html_specials(
        served: tuple[str, Backend], path: str) -> None:
    base, backend = served
    async with aiohttp.ClientSession() as session, session.get(
            f"{base}/{path}", params={"id": "room"}) as response:
        if path == "conversation/live":
            await response.content.readline()  # the page's heading
        await backend.history.append(turn(f"my token is {ESCAPABLE} ok", id="m1",
                                          conversation_id="room"))
        line = (await response.content.readline()).decode()
    assert "my token is [redacted] ok" in line
    assert "zq9f7e" not in line


def test_a_malformed_slack_token_key_is_refused_without_showing_it(tmp_path: Path) -> None:
    key = "not-a-fernet-key-but-still-a-secret"
    with pytest.raises(ConfigError, match="token_key is not a Fernet key") as refused:
        load(tmp_path, OAUTH, env={"THREADLINE_SLACK_TOKEN_KEY": key})
    assert key not in str(refused.value)
