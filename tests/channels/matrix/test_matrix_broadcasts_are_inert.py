"""A member cannot make the bot ping a Matrix room: `@room` and pills in a model's answer or a
member's `/remind` text are posted with empty `m.mentions`, so clients notify nobody (with
`m.mentions` present, the old body-matching push rules do not apply). Checked on the wire."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.matrix import ALICE, FakeMatrix, pill
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, say
from tests.runtime.test_listeners_survive_bad_events import until

PINGS = "@room read this, and you too"


async def test_room_pings_from_a_model_and_a_reminder_notify_nobody(tmp_path: Path) -> None:
    async with platform("matrix", streaming=False) as where, FakeAnthropic() as anthropic:
        fake: FakeMatrix = where.fake
        anthropic.script(text(f"Sure: {PINGS} {pill(ALICE, 'Alice')}"))
        async with running_in_process(tmp_path, "matrix", where, anthropic.url,
                                      more_yaml="scheduler:\n  poll_interval: 0.1\n"):
            await say("matrix", where, 0, "shout at everyone")
            await until(lambda: len(fake.messages_sent()) >= 1)
            await say("matrix", where, 0, f"/remind in 1 second to {PINGS}")
            await until(lambda: len(fake.messages_sent()) >= 3)
        posted = [s.content for s in fake.messages_sent()]
    assert posted[0]["body"].startswith("Sure: @room read this")
    assert posted[2]["body"] == PINGS  # the reminder, posted when due
    assert all(p["m.mentions"] == {} for p in posted)
