"""The YAML's `schedules:` are kept in step with the book at every start: added, updated in
place when changed, cancelled when removed; a schedule naming what does not exist is a config
error saying where."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.backends.sql.schedules import SqlScheduleBook
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.runtime import Runtime

BASE = """\
store:
  url: sqlite:///{db}
model:
  provider: offline
ops:
  enabled: false
channels:
  local: {{type: local, stdin: false}}
agents:
  support:
    channels: [local]
schedules:
"""
WEEKLY = """\
  weekly:
    channel: local
    conversation: local:main
    cron: "0 9 * * 1"
    timezone: Europe/Paris
    message: {text}
"""
LAUNCH = """\
  launch:
    channel: local
    conversation: local:main
    at: "2030-12-01 09:00"
    prompt: Announce the launch.
"""


async def started_and_stopped(config: Path) -> None:
    runtime = Runtime.build(load_settings(config))
    await runtime.start()
    await runtime.stop()


async def test_configured_schedules_are_added_updated_and_cancelled(tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    base = BASE.format(db=tmp_path / "threadline.db")
    config.write_text(base + WEEKLY.format(text="Weekly report day") + LAUNCH)
    await started_and_stopped(config)
    runtime = Runtime.build(load_settings(config))
    async with runtime.store:
        book = SqlScheduleBook(runtime.store)
        first = {s.name: s for s in await book.listed()}
    assert sorted(first) == ["launch", "weekly"]
    assert first["weekly"].cron == "0 9 * * 1" and first["weekly"].timezone == "Europe/Paris"
    assert first["weekly"].origin["channel_id"] == "main"
    assert first["launch"].kind == "prompt" and first["launch"].agent == "support"

    config.write_text(base + WEEKLY.format(text="Weekly report day, 9:30 stand-up"))
    await started_and_stopped(config)
    runtime = Runtime.build(load_settings(config))
    async with runtime.store:
        book = SqlScheduleBook(runtime.store)
        active = await book.listed()
        ended = await book.listed(states=("cancelled",))
    assert [(s.name, s.text) for s in active] == [("weekly", "Weekly report day, 9:30 stand-up")]
    assert active[0].id == first["weekly"].id and active[0].due_at == first["weekly"].due_at
    assert [s.name for s in ended] == ["launch"]


@pytest.mark.parametrize(("entry", "problem"), [
    ("  weekly: {channel: nowhere, conversation: 'local:main', cron: '0 9 * * 1', message: x}",
     "schedules.weekly.channel: unknown channel 'nowhere'"),
    ("  weekly: {channel: local, conversation: 'local:main', cron: '0 9 * * 1', "
     "at: '2030-01-01 09:00', message: x}", "set cron (recurring) or at (once), exactly one"),
    ("  weekly: {channel: local, conversation: 'local:main', cron: '0 99 * * 1', message: x}",
     "'0 99 * * 1' is not a cron expression"),
    ("  weekly: {channel: local, conversation: 'local:main', cron: '0 9 * * 1', message: x, "
     "timezone: Mars/Olympus}", "unknown time zone 'Mars/Olympus'"),
])
def test_a_schedule_naming_what_does_not_exist_is_a_config_error(
        tmp_path: Path, entry: str, problem: str) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(BASE.format(db=tmp_path / "threadline.db") + entry + "\n")
    with pytest.raises(ConfigError, match="schedules") as raised:
        load_settings(config)
    assert problem in str(raised.value)
