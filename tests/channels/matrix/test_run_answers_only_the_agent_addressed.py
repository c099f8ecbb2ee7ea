"""`threadline run` with two agents on one Matrix account: a message in a thread that names
one agent is answered by that agent only, in that thread, and the other stays silent; a
message in the room's main timeline naming the other is answered there by it."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.fakes.matrix import ALICE, BOB, FakeMatrix
from tests.runtime.platforms import Platform, run_config_head
from tests.runtime.test_run_kill9_answers_everything import start


def by_system_prompt(body: dict[str, Any]) -> Reply:
    """Each agent signs its answer with the name its system prompt gives it."""
    system = json.dumps(body.get("system", ""))
    return text("billing here" if "You do billing" in system else "support here")


def write_config(folder: Path, fake: FakeMatrix, model_url: str) -> Path:
    config = folder / "threadline.yaml"
    config.write_text(run_config_head(folder, model_url) + f"""\
  matrix:
    type: matrix
    homeserver: {fake.url}
    access_token: ${{MATRIX_ACCESS_TOKEN}}
    sync_timeout: 2000
    streaming: false
agents:
  support:
    system_prompt: You do support.
    channels: [matrix]
  billing:
    system_prompt: You do billing.
    channels: [matrix]
""", encoding="utf-8")
    return config


async def test_run_answers_the_named_agent_in_its_thread(tmp_path: Path) -> None:
    async with FakeMatrix() as fake, FakeAnthropic() as anthropic:
        anthropic.responder = by_system_prompt
        room = fake.add_room("Shop", members=[ALICE, BOB])
        root = fake.message(room, ALICE, "invoices")
        where = Platform("", {"MATRIX_ACCESS_TOKEN": fake.token}, fake)
        process = await start(write_config(tmp_path, fake, anthropic.url), where,
                              tmp_path / "run.log")
        try:
            fake.message(room, ALICE, "@billing was I charged twice?", thread=root["event_id"])
            [in_thread] = await fake.wait_for_sent(1, within=60)
            fake.message(room, BOB, "@support where is my parcel?")
            sent = await fake.wait_for_sent(2, within=60)
            # SIGTERM lets every turn taken finish: a wrong answer would be posted by then.
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(60):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert [s.content["body"] for s in fake.messages_sent()] == ["billing here", "support here"]
    assert in_thread.content["m.relates_to"]["rel_type"] == "m.thread"
    assert in_thread.content["m.relates_to"]["event_id"] == root["event_id"]
    in_room = sent[1].content["m.relates_to"]
    assert "rel_type" not in in_room and "m.in_reply_to" in in_room
    assert len(anthropic.bodies) == 2  # the other agent was never asked
