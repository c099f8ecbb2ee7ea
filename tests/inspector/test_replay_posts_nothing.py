"""Replay answers a recorded turn again, from the command line and from the console, with the
current options or the recorded prompt and any model; it posts and stores nothing.

Assembled again as of the turn, the prompt is the one the model first received, byte for byte,
although the conversation has moved on since."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from tests.cli.helpers import run_cli
from tests.fakes.anthropic import FakeAnthropic, text
from threadline.channels.local import LocalChannel
from threadline.config import load_settings
from threadline.runtime import Runtime


def write_config(path: Path, *, db: Path, api: str, system_prompt: str) -> None:
    path.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {api}
ops:
  port: 0
agents:
  support:
    system_prompt: {system_prompt}
    channels: [local]
""", encoding="utf-8")


async def test_replay_with_another_model_and_with_the_recorded_prompt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    config = tmp_path / "threadline.yaml"
    db = tmp_path / "threadline.db"
    async with FakeAnthropic() as anthropic:
        write_config(config, db=db, api=anthropic.url, system_prompt="You answer briefly.")
        anthropic.script(text("It ships Monday."), text("Noted."), text("Replayed: Monday."),
                         text("Second opinion: Monday."))
        runtime = Runtime.build(load_settings(config))
        await runtime.start()
        try:
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            await room.say("@support when does order 4417 ship?", user="ada")
            await room.say("@support thanks, bye", user="ada")  # the conversation moves on
            assert runtime.inspector.recorder is not None
            await runtime.inspector.recorder.flush()
            first = (await runtime.inspector.records.recent())[-1]
            turns_before = await runtime.store.count()

            capsys.readouterr()
            replayed = await asyncio.to_thread(
                run_cli, capsys, "inspect", "replay", first.id, "--config", str(config),
                "--model", "claude-haiku-4-5")
            assert replayed.code == 0, replayed.err
            assert f"replay of {first.id}" in replayed.out
            assert "recorded  claude-sonnet-5-5: It ships Monday." in replayed.out
            assert "replayed  claude-haiku-4-5: Replayed: Monday." in replayed.out
            recorded_body, replay_body = anthropic.bodies[0], anthropic.bodies[2]
            assert replay_body["model"] == "claude-haiku-4-5"
            assert json.dumps(replay_body["messages"]) == json.dumps(recorded_body["messages"])
            assert replay_body["system"] == recorded_body["system"]

            # The console, with the recorded prompt as it was and a third model.
            assert runtime.console_url is not None
            async with aiohttp.ClientSession() as session, session.post(
                    f"{runtime.console_url}records/{first.id}/replay",
                    data={"mode": "recorded", "model": "claude-opus-4-1"}) as response:
                assert response.status == 200
                page = await response.text()
            assert "Replayed · claude-opus-4-1" in page and "Second opinion: Monday." in page
            assert "Recorded · claude-sonnet-5-5" in page and "It ships Monday." in page
            assert anthropic.bodies[3]["model"] == "claude-opus-4-1"
            assert anthropic.bodies[3]["messages"] == recorded_body["messages"]

            assert len(room.sent) == 2  # nothing posted
            assert await runtime.store.count() == turns_before  # nothing stored
            assert len(await runtime.inspector.records.recent()) == 2  # nor recorded
        finally:
            await runtime.stop()


async def test_replay_of_a_turn_no_longer_in_the_history_says_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    config = tmp_path / "threadline.yaml"
    db = tmp_path / "threadline.db"
    async with FakeAnthropic() as anthropic:
        write_config(config, db=db, api=anthropic.url, system_prompt="You answer briefly.")
        runtime = Runtime.build(load_settings(config))
        await runtime.start()
        try:
            [room] = runtime.channels
            assert isinstance(room, LocalChannel)
            said = await room.say("@support hello", user="ada")
            assert runtime.inspector.recorder is not None
            await runtime.inspector.recorder.flush()
            [record] = await runtime.inspector.records.recent()
            await runtime.store.delete_messages(said.conversation_id, [said.id])
        finally:
            await runtime.stop()
        capsys.readouterr()
        outcome = await asyncio.to_thread(run_cli, capsys, "inspect", "replay", record.id,
                                          "--config", str(config))
        assert outcome.code == 2
        assert "no longer in the history" in outcome.err and "--recorded" in outcome.err
        outcome = await asyncio.to_thread(run_cli, capsys, "inspect", "replay", record.id,
                                          "--config", str(config), "--recorded")
        assert outcome.code == 0, outcome.err
        assert "fake reply 2" in outcome.out
