"""A backend from another package, registered by its entry point alone, serves `threadline run`:
the store URL's scheme picks it, turns are stored in it and answered, and a restarted process
answers from what it kept. It keeps no reply records or people, and the run says so once at
start, in plain words, instead of keeping them in process memory."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

from tests.backends import jsonl_backend
from tests.channels import files_platform
from tests.cli.helpers import run_process
from tests.launch import spawn

REPOSITORY = Path(__file__).resolve().parents[2]
CONFIG = """\
store:
  url: jsonl:///{history}
ops:
  enabled: false
channels:
  room:
    type: files
    inbox: inbox.txt
    outbox: outbox.txt
agents:
  support:
    channels: [room]
"""


def plugged_in_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    files_platform.registered_in(site)
    jsonl_backend.registered_in(site)
    path = os.pathsep.join([str(site), str(REPOSITORY), os.environ.get("PYTHONPATH", "")])
    return {**{k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"},
            "PYTHONPATH": path}


def replies(outbox: Path) -> list[str]:
    return outbox.read_text(encoding="utf-8").splitlines() if outbox.exists() else []


async def run_until_replies(tmp_path: Path, config: Path, env: dict[str, str],
                            count: int) -> str:
    """`threadline run` until the outbox holds `count` replies; its standard error."""
    process = await spawn("run", "--no-input", str(config), cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        async with asyncio.timeout(60):
            while len(await asyncio.to_thread(replies, tmp_path / "outbox.txt")) < count:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return err.decode()


async def test_a_plugged_in_backend_stores_answers_and_remembers_across_a_restart(
        tmp_path: Path) -> None:
    env = plugged_in_env(tmp_path)
    history = tmp_path / "history.jsonl"
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.format(history=history), encoding="utf-8")
    inbox = tmp_path / "inbox.txt"
    inbox.write_text("@support my order number is 1042\n", encoding="utf-8")

    first = await run_until_replies(tmp_path, config, env, 1)
    assert "backend jsonl keeps no reply records: the inspector is off" in first
    assert "backend jsonl keeps no people directory" in first
    assert first.count("keeps no reply records") == 1  # said once
    stored = [json.loads(line) for line in history.read_text(encoding="utf-8").splitlines()]
    assert next(m["content"] for m in stored) == "@support my order number is 1042"
    assert stored[1]["participant"]["id"] == "support"
    assert replies(tmp_path / "outbox.txt")[0].startswith("support> [offline model]")

    # A new process reads the history back from the backend: the second reply saw both turns
    # of the first run (the first line, delivered again, is stored once).
    with inbox.open("a", encoding="utf-8") as more:
        more.write("@support and what was my order number?\n")
    await run_until_replies(tmp_path, config, env, 2)
    answer = replies(tmp_path / "outbox.txt")[-1]
    assert answer.startswith("support> [offline model]")
    assert "1042" in answer
    contents = [json.loads(line)["content"]
                for line in history.read_text(encoding="utf-8").splitlines()]
    assert contents.count("@support my order number is 1042") == 1
    assert "@support and what was my order number?" in contents


def test_an_unknown_store_scheme_names_the_known_ones_and_the_entry_point_group(
        tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(CONFIG.format(history=tmp_path / "h.jsonl"), encoding="utf-8")
    outcome = run_process("check", str(config), cwd=tmp_path,
                          env={"PYTHONPATH": os.pathsep.join([
                              str(files_platform.registered_in(tmp_path / "only-files")),
                              str(REPOSITORY)])})
    assert outcome.code == 2
    assert "no backend serves store URLs of scheme 'jsonl'" in outcome.err
    assert "'threadline.backends' entry point group" in outcome.err
