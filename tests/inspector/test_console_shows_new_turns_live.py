"""The console shows a conversation's new turns as they are stored, through the history's change
notifications: Server-Sent Events for the API, a streamed page for the browser (no script).
Each turn crosses the wire redacted, and a turn of another conversation does not."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.history.helpers import turn
from threadline.backends import Backend, open_backend
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.redaction import Redactor

SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Backend]]:
    async with open_backend(f"sqlite:///{tmp_path / 'c.db'}") as backend:
        assert backend.records is not None
        app = console_app(records=backend.records, store=backend.history,
                          redactor=Redactor([SECRET]))
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/console", backend
        finally:
            await runner.cleanup()


async def test_new_turns_arrive_as_server_sent_events(served: tuple[str, Backend]) -> None:
    base, backend = served
    async with aiohttp.ClientSession() as session, session.get(
            f"{base}/api/conversation/live", params={"id": "room"}) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        await backend.history.append(turn("elsewhere", id="x1", conversation_id="other"))
        await backend.history.append(turn(f"my key is {SECRET}", id="m1",
                                          conversation_id="room"))
        line = await response.content.readline()
    event = json.loads(line.decode().removeprefix("data: "))
    assert event["id"] == "m1"
    assert SECRET not in event["content"] and "my key is" in event["content"]


async def test_the_page_streams_each_new_turn_without_a_script(
        served: tuple[str, Backend]) -> None:
    base, backend = served
    async with aiohttp.ClientSession() as session, session.get(
            f"{base}/conversation/live", params={"id": "room"}) as response:
        assert "script-src" not in response.headers["Content-Security-Policy"]
        assert "<h1>New turns of <code>room</code></h1>" in (
            await response.content.readline()).decode()
        await backend.history.append(turn("<b>hello</b>", id="m1", conversation_id="room"))
        item = (await response.content.readline()).decode()
    assert "&lt;b&gt;hello&lt;/b&gt;" in item
