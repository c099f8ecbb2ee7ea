"""The web platform is set up like every other: `threadline init --platform web` writes a starter
that loads once its secrets are set and points at docs/platforms/web.md; `threadline check` says
in words what would keep visitors out (no site allowed); a session secret written literally, a
short one, or an origin with a path are refused naming the key; `threadline demo --web` serves
the two demo agents in the widget on 127.0.0.1, and @billing answers there."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.channels.web.rig import Visitor, next_event
from tests.cli.helpers import run_cli
from tests.launch import spawn
from threadline.channels.web.settings import WebSettings
from threadline.config import load_settings
from threadline.errors import ConfigError

SECRETS = {"WEB_SESSION_SECRET": "a-long-enough-session-secret-for-tests"}


def test_init_writes_a_web_starter_that_loads_and_check_names_what_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bot.yaml"
    outcome = run_cli(capsys, "init", str(path), "--platform", "web")
    assert outcome.code == 0, outcome.err
    text = path.read_text(encoding="utf-8")
    assert "# Set-up, step by step: docs/platforms/web.md" in text
    assert (Path(__file__).parents[3] / "docs/platforms/web.md").is_file()
    settings = load_settings(path, env=SECRETS)
    web = settings.channels["web"]
    assert isinstance(web, WebSettings) and web.port == 8790 and web.origins == []
    assert {c.name for c in settings.agents["support"].channels} == {"local", "web"}

    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    text = text.replace("port: 8790", "port: 0")
    path.write_text(text, encoding="utf-8")
    checked = run_cli(capsys, "check", str(path))
    said = checked.out + checked.err
    assert "allows no site's pages (origins is empty)" in said
    assert "list the sites that embed the widget under origins" in said


@pytest.mark.parametrize(("lines", "said"), [
    ("session_secret: written-in-the-file-0123456789",
     "channels.web.session_secret"),
    ("session_secret: ${SHORT_SECRET}", "session_secret is too short"),
    ("session_secret: ${WEB_SESSION_SECRET}\n    identity_secret: ${SHORT_SECRET}",
     "identity_secret is too short"),
    ("session_secret: ${WEB_SESSION_SECRET}\n    origins: [https://shop.example/chat]",
     "write each as scheme://host[:port]"),
])
def test_bad_web_settings_are_refused_naming_the_key(tmp_path: Path, lines: str,
                                                     said: str) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
channels:
  web:
    type: web
    {lines}
agents:
  support: {{channels: [web]}}
""", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config, env={**SECRETS, "SHORT_SECRET": "short"})
    assert said in str(caught.value)


async def test_demo_web_serves_both_agents_in_the_widget(tmp_path: Path) -> None:
    process = await spawn("demo", "--web", "--db", str(tmp_path / "demo.db"), cwd=tmp_path,
        env={"PATH": str(Path(sys.executable).parent),
             "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(60):
            first = (await process.stdout.readline()).decode()
        found = re.search(r"open (http://127\.0\.0\.1:\d+)/ in a browser", first)
        assert found, first
        base = found.group(1)
        visitor = Visitor(base, origin=base)  # the demo's own chat page
        try:
            assert (await visitor.open())[0] == 200
            async with visitor.events() as events:
                await next_event(events, "ready")
                await visitor.send("@billing please send my invoice")
                await next_event(events, "turn")
                reply = await next_event(events, "turn", within=60)
            assert reply.data["from"] == "agent" and reply.data["name"] == "billing"
            assert reply.data["text"].startswith("[offline model]")
        finally:
            await visitor.close()
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(60):
            await process.wait()
    assert process.returncode == 0
