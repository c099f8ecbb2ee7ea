"""A platform from another package, registered by its entry point alone, is written by
`threadline init`, checked by `threadline check`, configured from YAML and served by
`threadline run`: config, runtime and CLI never name it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.channels.files_platform import registered_in
from tests.cli.helpers import run_process, run_until_replied

REPOSITORY = Path(__file__).resolve().parents[2]


def plugged_in_env(tmp_path: Path) -> dict[str, str]:
    site = registered_in(tmp_path / "site")
    path = os.pathsep.join([str(site), str(REPOSITORY), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path}


async def test_init_check_and_run_a_plugged_in_platform(tmp_path: Path) -> None:
    env = plugged_in_env(tmp_path)
    config = tmp_path / "threadline.yaml"
    written = run_process("init", "--platform", "files", str(config), cwd=tmp_path, env=env)
    assert written.code == 0, written.err
    text = config.read_text(encoding="utf-8")
    assert "  files:\n    type: files\n    inbox: inbox.txt" in text
    config.write_text(text.replace("port: 9108", "port: 0"), encoding="utf-8")

    checked = run_process("check", str(config), cwd=tmp_path, env=env)
    assert checked.code == 0, checked.err
    assert "ok    channel files (files): bot files (files-bot)" in checked.out
    assert "warn  channel files (files): inbox.txt does not exist yet" in checked.out

    (tmp_path / "inbox.txt").write_text("@support hello from the files room\n",
                                        encoding="utf-8")
    replies = await run_until_replied(config, cwd=tmp_path, env=env,
                                      outbox=tmp_path / "outbox.txt")
    assert replies.startswith("support> [offline model]")


def test_an_unknown_platform_type_names_the_known_ones(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text("channels:\n  room:\n    type: files\n    inbox: a\n    outbox: b\n",
                      encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path)
    assert outcome.code == 2
    assert (f"threadline: error: {config}:3: channels.room.type: unknown platform type "
            "'files'; expected one of local, slack, telegram, discord") in outcome.err
    plugged = run_process("check", str(config), cwd=tmp_path, env=plugged_in_env(tmp_path))
    assert "unknown platform type" not in plugged.err
