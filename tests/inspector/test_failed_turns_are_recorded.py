"""A turn whose model call fails is recorded too: the friendly reply people got, the request
that was refused and why; `threadline inspect show` tells the story in plain text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.cli.helpers import run_cli
from tests.fakes.anthropic import FakeAnthropic, error
from threadline.channels.local import LocalChannel
from threadline.config import load_settings
from threadline.runtime import Runtime


async def test_a_refused_request_is_in_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    db = tmp_path / "threadline.db"
    config = tmp_path / "threadline.yaml"
    async with FakeAnthropic() as anthropic:
        anthropic.script(error(400, "invalid_request_error", "prompt is too long: 250000 tokens"))
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
ops:
  enabled: false
agents:
  billing:
    channels: [local]
""", encoding="utf-8")
        runtime = Runtime.build(load_settings(config))
        await runtime.start()
        try:
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            await room.say("@billing refund my order", user="ada")
        finally:
            await runtime.stop()
        refused = anthropic.bodies[0]

    capsys.readouterr()
    listed = await asyncio.to_thread(run_cli, capsys, "inspect", "list", "--db", str(db))
    [line] = listed.out.splitlines()
    record_id = line.split()[0]
    assert "billing (mention)  error" in line and "error: ModelError: Anthropic rejected" in line
    shown = await asyncio.to_thread(run_cli, capsys, "inspect", "show", record_id, "--db",
                                    str(db))
    assert shown.code == 0, shown.err
    text = shown.out
    assert "  why it answered: mention" in text
    assert "  answering: ada: @billing refund my order" in text
    assert "prompt: " in text and "[newest] user" in text
    assert "  1. claude-sonnet-5-5 -: 0 in, 0 out, 0 cache read" in text
    assert "error: ModelError: Anthropic rejected the request" in text
    assert "prompt is too long: 250000 tokens" in text
    assert "reply: Sorry, I could not answer that just now" in text
    json_out = await asyncio.to_thread(run_cli, capsys, "inspect", "show", record_id, "--db",
                                       str(db), "--json")
    whole = json.loads(json_out.out)
    assert whole["stop_reason"] == "error" and whole["latency_ms"] > 0
    assert whole["detail"]["model_calls"][0]["error"].startswith("ModelError: Anthropic rejected")
    assert refused["messages"][0]["content"][0]["text"] == "ada: @billing refund my order"
    missing = await asyncio.to_thread(run_cli, capsys, "inspect", "show", "nope-nope",
                                      "--db", str(db))
    assert missing.code == 2 and "inspect list" in missing.err
