"""A PDF crafted to parse slowly cannot hold Slack's acknowledgement or its turn.

The event is acknowledged once the file's bytes are kept, before any parsing, within Slack's
3 s; the turn is answered with a line saying the document could not be read in time (a budget
of 1 s here, the PDF needs far more); Slack's retry of the same event downloads nothing and
parses nothing again.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.files import slow_pdf
from tests.fakes.slack import FakeSlack
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.slack import SlackChannel
from threadline.team import Team

SLACK_ACK_SECONDS = 3.0  # Slack's own deadline, not a measurement of ours


async def test_a_slow_pdf_is_acknowledged_at_once_and_answered_as_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeSlack() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        model.script(text("I could not read it; could you paste the totals?"))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=FileIntake(store=SqlFileStore(store), read_seconds=1.0),
                    respond_to_all=True)
        channel = SlackChannel(**fake.channel_settings())
        team.attach(channel, respond_to_all=True)
        await team.start()
        try:
            post = fake.message_event("what are the totals?", files=[
                fake.add_file(slow_pdf(), name="report.pdf")])
            async with asyncio.timeout(SLACK_ACK_SECONDS):
                first = await fake.deliver_event(channel.events_url, post, event_id="Ev0SLOW")
            assert first.status == 200
            await fake.wait_for_calls("chat.postMessage", 1)
            retry = await fake.deliver_event(channel.events_url, post, event_id="Ev0SLOW",
                                             retry_num=1)
            assert retry.status == 200
        finally:
            await team.stop()
        assert fake.file_downloads == ["F0001"]  # the retry downloaded nothing
        [prompt] = [json.dumps(body) for body in model.bodies]
        assert "what are the totals?" in prompt
        assert "the document report.pdf could not be read in time" in prompt
        [turn] = [t for t in await store.get("slack:T0FAKE:C0GENERAL")
                  if t.participant.kind == "user"]
        assert "could not be read in time" in turn.content
    assert capsys.readouterr().out.count("files.read_out_of_time") == 1  # parsed once
