"""A case captured from a reply record (`threadline eval capture RECORD_ID`) puts the agent
back before the very prompt it saw (the same turns, the same recall), and run against a second
config shows what that config changes."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml

from threadline.agents.agent import Agent
from threadline.channels.local import LocalChannel
from threadline.cli.main import main
from threadline.config import Settings, load_settings
from threadline.evals.cases import load_cases
from threadline.evals.running import answer_case
from threadline.features import BuiltFeatures
from threadline.inspector.record import ReplyRecord
from threadline.inspector.recorder import ReplyRecorder
from threadline.ops import Metrics
from threadline.runtime import backend_for_settings, build_agents
from threadline.team import Team

CONFIG = """\
store:
  url: sqlite:///{db}
model:
  provider: offline
agents:
  support:
    system_prompt: {prompt}
    memory:
      token_budget: {budget}
      recall_by_meaning: false
    channels: [local]
"""
LINES = [
    "@support I bought a blue teapot with a bamboo handle last spring",
    *(f"@support note {n}: the weather in town was grey again today" for n in range(12)),
    "@support what did I say about the teapot handle?",
]


def config(folder: Path, name: str, *, prompt: str, budget: int) -> Path:
    path = folder / name
    path.write_text(CONFIG.format(db=folder / "threadline.db", prompt=prompt, budget=budget),
                    encoding="utf-8")
    return path


async def recorded_conversation(settings: Settings) -> ReplyRecord:
    """Ada's turns answered as `threadline run` answers them; the last reply's record."""
    async with backend_for_settings(settings) as backend:
        assert backend.records is not None
        recorder = ReplyRecorder(backend.records)
        agents: list[Agent] = build_agents(settings, backend=backend, provider=None,
                                           metrics=Metrics(), features=BuiltFeatures(),
                                           observer=recorder)
        team = Team(agents)
        room = LocalChannel(name="local", room="shop")
        team.attach(room)
        await team.start()
        try:
            for line in LINES:
                await room.say(line, user="ada")
            await recorder.flush()
        finally:
            await team.stop()
            await recorder.close()
            for agent in agents:
                await agent.close()
        [newest] = await backend.records.recent(limit=1)
        record = await backend.records.get(newest.id)
        assert record is not None
        return record


async def test_a_captured_case_reproduces_the_prompt_and_shows_a_second_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    current = config(tmp_path, "current.yaml", prompt="You help customers of a tea shop.",
                     budget=300)
    leaner = config(tmp_path, "leaner.yaml", prompt="Answer in one short line.", budget=120)
    settings = load_settings(current)
    record = await recorded_conversation(settings)
    seen = [p["content"] for p in (record.detail or {})["prompt"]["parts"]]
    assert any(p["part"] == "recalled" for p in (record.detail or {})["prompt"]["parts"]), (
        "the conversation is long enough that recall brings the teapot back")

    cases = tmp_path / "regressions.yaml"
    # The command runs its own event loop: in a thread, as from a shell.
    code = await asyncio.to_thread(main, [
        "eval", "capture", record.id[:10], "--db", str(tmp_path / "threadline.db"),
        "-o", str(cases), "--name", "teapot handle"])
    assert code == 0, capsys.readouterr().err
    [case] = load_cases(cases)
    assert case.to == ["support"] and case.captured_from == record.id
    assert case.turn is not None and case.turn["content"] == LINES[-1]

    answered = await answer_case(case, settings, cases_dir=tmp_path)
    [reply] = answered.replies
    assert list(reply.prompt) == seen  # the same turns, the same summary, the same recall
    assert reply.text == record.reply

    # The operator writes the expectation, then compares the leaner config with today's.
    raw = yaml.safe_load(cases.read_text(encoding="utf-8"))
    raw["cases"][0]["expect"] = {"contains": "bamboo handle"}
    cases.write_text(yaml.safe_dump(raw), encoding="utf-8")
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["eval", str(cases), "--config", str(current),
                                          "--against", str(leaner)])
    out = capsys.readouterr().out
    assert "teapot handle" in out
    assert "[current.yaml]" in out and "[leaner.yaml]" in out
    # The offline model finds the handle either way; the leaner config shows it for less.
    assert re.search(r"tokens: (\d+) -> (\d+)", out), out
    before, after = map(int, re.search(r"tokens: (\d+) -> (\d+)", out).groups())  # type: ignore[union-attr]
    assert after < before
    assert code == 0
