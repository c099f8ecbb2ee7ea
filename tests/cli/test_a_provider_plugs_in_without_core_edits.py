"""A model provider from another package, registered by its entry point alone, is named in the
YAML, validated with its own settings, checked by `threadline check` and answers through
`threadline run`: config, runtime and CLI never name it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.agents import shouting_provider
from tests.channels import files_platform
from tests.cli.helpers import run_process, run_until_replied
from tests.cli.test_a_platform_plugs_in_without_core_edits import REPOSITORY

CONFIG = """\
ops:
  enabled: false
store:
  url: sqlite:///bot.db
channels:
  files:
    type: files
    inbox: inbox.txt
    outbox: outbox.txt
providers:
  loud:
    type: shouting
    prefix: "LOUD:"
agents:
  support:
    provider: loud
    channels: [files]
"""


def plugged_in_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    files_platform.registered_in(site)
    shouting_provider.registered_in(site)
    path = os.pathsep.join([str(site), str(REPOSITORY), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path}


async def test_a_plugged_in_provider_named_in_yaml_answers_through_run(tmp_path: Path) -> None:
    env = plugged_in_env(tmp_path)
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    checked = run_process("check", str(config), cwd=tmp_path, env=env)
    assert checked.code == 0, checked.err
    assert "model provider loud (shouting): shouting with 'LOUD:'" in checked.out

    (tmp_path / "inbox.txt").write_text("@support is anyone there\n", encoding="utf-8")
    replies = await run_until_replied(config, cwd=tmp_path, env=env,
                                      outbox=tmp_path / "outbox.txt")
    assert replies == "support> LOUD: READER: @SUPPORT IS ANYONE THERE (shout-1)\n"


def test_a_plugged_in_provider_checks_its_own_settings(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.replace('prefix: "LOUD:"', "volume: 11"), encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path, env=plugged_in_env(tmp_path))
    assert outcome.code == 2
    assert "providers.loud.volume: Extra inputs are not permitted" in outcome.err


def test_an_unknown_provider_says_where_one_registers(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path,
                          env={"PYTHONPATH": str(files_platform.registered_in(tmp_path / "s"))
                               + os.pathsep + str(REPOSITORY)})
    assert outcome.code == 2
    assert ("providers.loud.type: unknown model provider 'shouting'; known providers: "
            "anthropic, offline, openai (a third-party provider registers under the "
            "'threadline.providers' entry point group)") in outcome.err
