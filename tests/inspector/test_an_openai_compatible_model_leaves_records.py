"""A turn answered by an OpenAI-compatible model (the real `openai` SDK against the fake Chat
Completions server) leaves a reply record holding the exact request, shown by `inspect show`
and the console; a turn whose record cannot be built is given up alone, with the records
behind it written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from tests.cli.helpers import run_cli
from tests.fakes.openai import FakeOpenAI, text, tool_call
from threadline.agents import Agent, OfflineModel
from threadline.agents.openai_provider import OpenAIProvider
from threadline.agents.tools import tool
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.records import SqlReplyRecords
from threadline.history.model import Participant, StoredMessage
from threadline.inspector import ReplyRecorder
from threadline.inspector.console import console_app, standalone_app
from threadline.inspector.redaction import Redactor


@tool
async def parcel_status(code: str) -> str:
    """Where a parcel is.

    Args:
        code: the parcel's code
    """
    return f"{code} is at the depot"


def said(words: str, conversation: str = "local:desk") -> StoredMessage:
    return StoredMessage(conversation_id=conversation, content=words,
                         participant=Participant(kind="user", id="ada"))


async def test_the_record_holds_the_chat_completions_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}"
    async with FakeOpenAI() as fake, SqlConversationStore(url) as store:
        fake.script(tool_call("parcel_status", {"code": "ZEBRA-4417"}),
                    text("It is at the depot."))
        records = SqlReplyRecords(store)
        recorder = ReplyRecorder(records)
        agent = Agent(name="support", conversation_history=store, model="local-model",
                      provider=OpenAIProvider(fake.client()), tools=[parcel_status],
                      observer=recorder)
        await agent.invoke(said("@support where is ZEBRA-4417?"))
        await recorder.close()
        await agent.close()
        received = fake.bodies

        [listed] = await records.recent("local:desk")
        record = await records.get(listed.id)
        assert record is not None and record.detail is not None
        calls = record.detail["model_calls"]
        assert [c["format"] for c in calls] == ["openai", "openai"]
        for call, body in zip(calls, received, strict=True):
            assert call["request"]["messages"] == body["messages"]
            assert call["request"]["tools"] == [t["function"]["name"] for t in body["tools"]]
        assert record.detail["tool_exchanges"][0]["call"]["name"] == "parcel_status"
        assert record.reply == "It is at the depot."

        # The console's page of that record.
        app = console_app(records=records, store=store, redactor=Redactor())
        runner = web.AppRunner(standalone_app(app))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            port = runner.addresses[0][1]
            async with aiohttp.ClientSession() as session, session.get(
                    f"http://127.0.0.1:{port}/console/records/{record.id}") as response:
                assert response.status == 200
                page = await response.text()
        finally:
            await runner.cleanup()
        assert "the exact request (openai)" in page and "ZEBRA-4417" in page

    capsys.readouterr()
    shown = await asyncio.to_thread(run_cli, capsys, "inspect", "show", record.id, "--url", url,
                                    "--json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["detail"]["model_calls"][1]["request"]["messages"] == \
        received[1]["messages"]


class _BrokenRendering(OfflineModel):
    """A provider whose rendering raises (a bug): its turns cannot be recorded."""

    def render(self, request: object) -> dict[str, object]:
        raise KeyError("name")


async def test_a_record_that_cannot_be_built_holds_up_no_other(tmp_path: Path) -> None:
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        records = SqlReplyRecords(store)
        recorder = ReplyRecorder(records)
        broken = Agent(name="broken", conversation_history=store,
                       provider=_BrokenRendering(), observer=recorder)
        fine = Agent(name="fine", conversation_history=store, provider=OfflineModel(),
                     observer=recorder)
        with capture_logs() as logged:
            await broken.invoke(said("@broken hello", "local:one"))
            await fine.invoke(said("@fine hello", "local:two"))
            async with asyncio.timeout(30):  # the old recorder retried the batch forever
                await recorder.close()
        await broken.close()
        await fine.close()
        assert [r.agent for r in await records.recent()] == ["fine"]
    [given_up] = [e for e in logged if e["event"] == "inspector.record_unbuildable"]
    assert given_up["conversation_id"] == "local:one" and given_up["agent"] == "broken"
    assert "KeyError" in given_up["error"]
    assert not [e for e in logged if e["event"] == "inspector.record_write_failed"]
