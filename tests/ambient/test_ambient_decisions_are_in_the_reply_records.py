"""An ambient agent's decisions are in the reply records, both ways: asked twice over 30
unaddressed turns, the fake model answering QUIET then SPEAK, the records hold one quiet
decision (its reason, the turns it considered, its tokens, no reply) and one spoken reply
(its reason); on a SQLite file and on the memory backend, as `threadline inspect list` and
the console show them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.ambient.test_an_ambient_agent_decides_to_speak import TURNS, chat, is_question
from tests.fakes.anthropic import FakeAnthropic, Reply, text
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, replies_sent
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.cli.inspect import format_line
from threadline.inspector.console import console_app, standalone_app
from threadline.runtime import Runtime

STORES = {"sqlite": None, "memory": "memory://"}
QUIET_WHY = "only small talk so far"
SPOKE_WHY = "a refund question nobody answered"


def quiet_then_speak() -> Any:
    """The first question is answered QUIET, every later one SPEAK; answers are one line."""
    asked: list[int] = []

    def responder(body: dict[str, Any]) -> Reply:
        if not is_question(body):
            return text("Refunds take five days.")
        asked.append(1)
        return text(f"QUIET: {QUIET_WHY}" if len(asked) == 1 else f"SPEAK: {SPOKE_WHY}")

    return responder


async def settled(runtime: Runtime) -> None:
    async with asyncio.timeout(30):
        while await runtime.backend.inbox.conversations_waiting():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await runtime.inspector.recorder.flush()


@pytest.mark.parametrize("store", sorted(STORES))
async def test_a_quiet_decision_and_a_spoken_reply_are_both_recorded(
        tmp_path: Path, store: str) -> None:
    ambient = ("ambient:\n  agents:\n    support:\n      channels: [discord]\n"
               "      every_turns: 15\n      min_minutes: 0\n")
    said = [f"chatting {n}" for n in range(1, TURNS + 1)]
    said[-1] = "how do I get a refund?"
    async with platform("discord", streaming=False) as where, FakeAnthropic() as anthropic:
        anthropic.responder = quiet_then_speak()
        async with running_in_process(tmp_path, "discord", where, anthropic.url,
                                      more_yaml=ambient, store_url=STORES[store]) as runtime:
            await chat(where, said)
            await until(lambda: len(replies_sent("discord", where)) >= 1)
            await settled(runtime)
            records = runtime.inspector.records
            assert records is not None
            listed = await records.recent()
            quiet_whole = await records.get(listed[-1].id)
            turns = await runtime.store.get(listed[0].conversation_id)
            page = await console_pages(runtime, listed[-1].id)
    assert len([r for r in anthropic.requests if is_question(r.body)]) == 2
    assert replies_sent("discord", where) == ["Refunds take five days."]
    spoken, quiet = listed  # newest first
    people = [t for t in turns if t.participant.kind == "user"]
    assert len(people) == TURNS

    assert quiet.addressed_because == f"ambient: stayed quiet: {QUIET_WHY}"
    assert (quiet.stop_reason, quiet.reply, quiet.outbound_id) == ("quiet", "", None)
    assert quiet.inbound_id == people[14].id  # the 15th turn set off the first question
    assert quiet.model_calls == 1 and quiet.output_tokens > 0
    assert quiet.input_tokens + quiet.cache_read_tokens + quiet.cache_write_tokens > 0
    assert quiet.agent == "support" and quiet.error is None
    assert quiet_whole is not None and quiet_whole.detail is not None
    considered = quiet_whole.detail["prompt"]["included_ids"]
    assert considered == [t.id for t in people[:15]]
    [call] = quiet_whole.detail["model_calls"]
    assert call["response"]["text"] == f"QUIET: {QUIET_WHY}"
    assert call["usage"]["output_tokens"] == quiet.output_tokens

    assert spoken.addressed_because == f"ambient: spoke: {SPOKE_WHY}"
    assert spoken.reply == "Refunds take five days." and spoken.stop_reason == "end_turn"
    assert spoken.inbound_id == people[-1].id and spoken.outbound_id is not None

    lines = [format_line(r) for r in listed]
    assert f"(ambient: stayed quiet: {QUIET_WHY})  quiet" in lines[1]
    assert f"(ambient: spoke: {SPOKE_WHY})  end_turn" in lines[0]
    conversation_page, record_page = page
    assert f"ambient: stayed quiet: {QUIET_WHY}" in conversation_page
    assert f"ambient: spoke: {SPOKE_WHY}" in conversation_page
    assert f"ambient: stayed quiet: {QUIET_WHY}" in record_page


async def console_pages(runtime: Runtime, record_id: str) -> tuple[str, str]:
    """The console's conversation page and the quiet decision's record page, over HTTP."""
    records = runtime.inspector.records
    assert records is not None
    app = console_app(records=records, store=runtime.store, redactor=runtime.inspector.redactor)
    runner = web.AppRunner(standalone_app(app))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}/console"
    conversation_id = (await records.conversations())[0].conversation_id
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/conversation",
                                   params={"id": conversation_id}) as response:
                assert response.status == 200
                conversation = await response.text()
            async with session.get(f"{base}/records/{record_id}") as response:
                assert response.status == 200
                record = await response.text()
    finally:
        await runner.cleanup()
    return conversation, record
