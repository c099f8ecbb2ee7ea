"""A feature from another package, registered by its entry point alone (`tickets_feature`),
is configured from its own YAML section and used by `threadline run`: its command answers,
its per-turn tool is offered to the model, and its stage claims the turns it is for."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.cli.helpers import run_process
from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.telegram import TgUser, private_chat
from tests.features.tickets_feature import registered_in
from tests.runtime.platforms import platform, write_config
from tests.runtime.test_run_kill9_answers_everything import start, until

REPOSITORY = Path(__file__).resolve().parents[2]


async def test_run_uses_a_feature_registered_by_an_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = registered_in(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(site), str(REPOSITORY), os.environ.get("PYTHONPATH", "")]))
    person = TgUser(2001, "Person0", username="person0")
    async with platform("telegram", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.script(text("I can open a ticket for that."))
        config = write_config(tmp_path, "telegram", where, anthropic.url)
        config.write_text(config.read_text(encoding="utf-8")
                          + "features:\n  tickets:\n    prefix: SUP\n", encoding="utf-8")
        telegram = where.fake
        process = await start(config, where, tmp_path / "run.log")
        try:
            chat = private_chat(person)
            await telegram.deliver(telegram.message(chat, person, "/ticket printer on fire"))
            await until(lambda: "Opened SUP-1." in telegram.texts.values())
            await telegram.deliver(telegram.message(chat, person, "!status please"))
            await until(lambda: "1 open: printer on fire" in telegram.texts.values())
            await telegram.deliver(telegram.message(chat, person, "my screen is blank"))
            await until(lambda: "I can open a ticket for that." in telegram.texts.values())
        finally:
            process.send_signal(signal.SIGTERM)
            await process.wait()
    [request] = anthropic.requests  # the stage's turn and the command cost no model call
    assert "open_ticket" in {tool["name"] for tool in request.body["tools"]}
    assert any(c["command"] == "ticket" for c in telegram.my_commands)  # offered on Telegram


def test_a_features_section_is_checked_by_its_own_model(tmp_path: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(registered_in(tmp_path / "site")),
                                          str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    config = tmp_path / "threadline.yaml"
    config.write_text("features:\n  tickets:\n    prefx: SUP\n", encoding="utf-8")
    checked = run_process("check", str(config), cwd=tmp_path, env=env)
    assert checked.code == 2, checked.out
    assert "features.tickets: prefx: Extra inputs are not permitted" in checked.err
    config.write_text("features:\n  tickest: {}\n", encoding="utf-8")
    checked = run_process("check", str(config), cwd=tmp_path, env=env)
    assert checked.code == 2, checked.out
    assert "no feature is named tickest" in checked.err
    assert "did you mean 'tickets'?" in checked.err
