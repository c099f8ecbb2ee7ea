"""Files shared on Slack reach the model: fetched from `url_private` with the bot token.

A PNG arrives as an image block, a PDF as its text; a file Slack says is 30 MB is not fetched,
and the message's text is still answered with a note saying why. The stored turn names its
files, and their bytes are kept.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.files import chart_tool, pdf, png
from tests.fakes.slack import FakeSlack
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.slack import SlackChannel
from threadline.history.files import files_of
from threadline.team import Team


async def test_a_shared_png_and_pdf_reach_the_model_and_a_huge_file_is_refused(
        tmp_path: Path) -> None:
    picture, invoice = png(320, 200), pdf("Slack invoice 5521")
    async with FakeSlack() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        model.script(*[text("Looked at it.")] * 4)
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=files, respond_to_all=True)
        channel = SlackChannel(**fake.channel_settings())
        team.attach(channel, respond_to_all=True)
        await team.start()
        try:
            posts = [
                fake.message_event("what is this?", files=[fake.add_file(picture,
                                                                          name="shot.png")]),
                fake.message_event("", files=[fake.add_file(invoice, name="invoice.pdf")]),
                fake.message_event("and this scan", files=[fake.add_file(
                    b"%PDF-1.4", name="scan.pdf", size=30 * 1024 * 1024)]),
            ]
            for number, post in enumerate(posts, start=1):
                await fake.deliver_event(channel.events_url, post)
                await fake.wait_for_calls("chat.postMessage", number)
        finally:
            await team.stop()
        assert fake.file_downloads == ["F0001", "F0002"]  # the 30 MB file is never fetched
        first, _describe, second, third = (json.dumps(b) for b in model.bodies)
        assert base64.b64encode(picture).decode() in first
        assert '"type": "image"' in first and '"type": "image"' not in second
        assert "Slack invoice 5521" in second
        assert "and this scan" in third and "30.0 MB is over this channel's limit" in third
        turns = [t for t in await store.get("slack:T0FAKE:C0GENERAL")]
        shot = files_of(turns[0].metadata.extra)[0]
        assert (shot.name, shot.media_type, shot.platform_id) == ("shot.png", "image/png",
                                                                  "F0001")
        assert await files.store.get(shot.sha256) == picture


async def test_a_chart_a_tool_made_is_shared_once_in_the_thread(tmp_path: Path) -> None:
    chart = png(300, 200)
    draw_chart = chart_tool(chart)

    async with FakeSlack() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
        fake.add_user("U0ALICE", display_name="Alice")
        fake.add_channel("C0GENERAL", name="general")
        model.script(tool_use("draw_chart", {}), text("Here is the chart."))
        team = Team([Agent(name="support", conversation_history=store, tools=[draw_chart],
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=FileIntake(store=SqlFileStore(store)))
        channel = SlackChannel(**fake.channel_settings())
        team.attach(channel, respond_to_all=True)
        await team.start()
        try:
            post = fake.message_event("chart my sales")
            await fake.deliver_event(channel.events_url, post)
            await fake.wait_for_calls("files.completeUploadExternal", 1)
        finally:
            await team.stop()
        assert [(u["filename"], u["data"], u["channel"], u["thread_ts"])
                for u in fake.uploaded] == [("sales.png", chart, "C0GENERAL", post["ts"])]
        assert len(fake.calls_to("files.getUploadURLExternal")) == 1
        reply = (await store.get(f"slack:T0FAKE:C0GENERAL:{post['ts']}"))[-1]
        assert files_of(reply.metadata.extra)[0].name == "sales.png"
        assert reply.metadata.extra["part_ids"][-1] == fake.uploaded[0]["id"]
