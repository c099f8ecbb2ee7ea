"""Secrets from the config and the environment never reach a reply record or a console page,
even when a person pastes one, a tool returns one and the model repeats one."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from threadline.channels.local import LocalChannel
from threadline.config import load_settings
from threadline.runtime import Runtime

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-8d1f0c2a9b",
    "SLACK_BOT_TOKEN": "xoxb-1111-2222-abcdefsecret",
    "SLACK_SIGNING_SECRET": "signing-5f4dcc3b5aa765d6",
    "SUPPORT_DB_PASSWORD": "hunter2-but-longer",  # in the environment only, not the config
    # HTML escaping changes it (`&amp;`, `&lt;`, `&#34;`): it must be redacted before that.
    "SUPPORT_API_TOKEN": "pw&<zq9f7e>'\"x",
}
TOOL_MODULE = "leaky_account_tools"
TOOL = '''\
import os


async def account_settings() -> str:
    """The support account's settings."""
    return f"db password {os.environ['SUPPORT_DB_PASSWORD']}, slack {os.environ['SLACK_BOT_TOKEN']}"
'''


async def test_no_secret_in_records_or_pages(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    (tmp_path / f"{TOOL_MODULE}.py").write_text(TOOL, encoding="utf-8")
    # The runtime imports the tool module. monkeypatch notes that the name is not imported now
    # and takes it out of sys.modules again after the test, so no other test finds this one.
    monkeypatch.setitem(sys.modules, TOOL_MODULE, None)
    del sys.modules[TOOL_MODULE]
    db = tmp_path / "threadline.db"
    async with FakeAnthropic() as anthropic:
        anthropic.script(tool_use("account_settings", {}),
                         text(f"Here it is: {SECRETS['SUPPORT_DB_PASSWORD']}"))
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
ops:
  port: 0
channels:
  local:
    type: local
  slack:
    type: slack
    bot_token: ${{SLACK_BOT_TOKEN}}
    signing_secret: ${{SLACK_SIGNING_SECRET}}
agents:
  support:
    tools: ["{TOOL_MODULE}:account_settings"]
    channels: [local]
""", encoding="utf-8")
        runtime = Runtime.build(load_settings(config))
        await runtime.start()
        try:
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            await room.say(f"@support my key is {SECRETS['ANTHROPIC_API_KEY']} and my token "
                           f"{SECRETS['SUPPORT_API_TOKEN']}, what's stored?", user="ada")
            assert runtime.inspector.recorder is not None
            await runtime.inspector.recorder.flush()
            [record] = await runtime.inspector.records.recent()
            url = runtime.console_url
            assert url is not None
            pages = {}
            async with aiohttp.ClientSession() as session:
                for path in ("", "conversation?id=local:main", f"records/{record.id}", "charts",
                             "api/conversations", "api/conversation?id=local:main",
                             f"api/records/{record.id}", "api/charts"):
                    async with session.get(url + path) as response:
                        assert response.status == 200, path
                        pages[path] = await response.text()
        finally:
            await runtime.stop()

    # The model did receive them (the history is not redacted), so redaction had work to do.
    assert SECRETS["ANTHROPIC_API_KEY"] in str(anthropic.bodies[0])
    assert SECRETS["SUPPORT_DB_PASSWORD"] in str(anthropic.bodies[1])
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT * FROM threadline_reply_records").fetchall()
    stored = repr(rows)
    assert len(rows) == 1 and "[redacted]" in stored
    for name, secret in SECRETS.items():
        assert secret not in stored, name
        for path, page in pages.items():
            assert secret not in page, (name, path)
    for path, page in pages.items():
        assert "zq9f7e" not in page, path  # in no escaped form either
    assert "[redacted]" in pages[f"records/{record.id}"]
    assert "[redacted]" in pages["conversation?id=local:main"]
