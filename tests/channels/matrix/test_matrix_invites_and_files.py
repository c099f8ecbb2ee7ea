"""Invites are accepted from the servers and people `auto_join` names, once each (the invite
shows again after joining); files come from the homeserver's authenticated media API with the
bot's token, within the size limit; a file a tool made is uploaded to the media repository and
posted once after the reply's text."""

from __future__ import annotations

from pathlib import Path

from tests.channels.matrix.rig import matrix_channel
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.files import chart_tool, pdf, png
from tests.fakes.matrix import ALICE, FakeMatrix
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.matrix import MatrixChannel
from threadline.history.files import files_of
from threadline.team import Team

model = fake_anthropic_fixture()


async def test_invites_from_allowed_servers_are_joined_once(
        fake: FakeMatrix, channel: MatrixChannel) -> None:
    ours = fake.add_room("Ours", members=[ALICE], joined=False)
    theirs = fake.add_room("Theirs", members=["@mallory:evil.test"], joined=False)
    fake.invite(ours, ALICE)
    fake.invite(theirs, "@mallory:evil.test")
    await fake.wait_until(lambda: fake.rooms[ours].joined)
    await fake.wait_for_sync_past(fake.position)
    await fake.wait_for_sync_past(fake.position)  # the invite shown again is left alone
    joins = [c.path for c in fake.calls_of("join")]
    assert len(joins) == 1 and joins[0].endswith(ours)
    assert not fake.rooms[theirs].joined


async def test_a_file_is_fetched_with_the_token_and_reaches_the_model(
        fake: FakeMatrix, model: FakeAnthropic, sqlite_url: str, tmp_path: Path) -> None:
    model.script(text("Your invoice is for 42 euros."), text("noted"))
    room = fake.add_room("Alice", members=[ALICE])
    async with SqlConversationStore(sqlite_url) as store:
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"),
                           max_file_bytes=50_000)
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=files)
        team.attach(matrix_channel(fake, store))
        await team.start()
        try:
            fake.file(room, ALICE, pdf("Invoice total: 42 EUR"), name="invoice.pdf",
                      mimetype="application/pdf")
            await fake.wait_for_sent(1)
            fake.file(room, ALICE, b"x" * 60_000, name="huge.bin",
                      mimetype="application/octet-stream", declared_size=10)
            await fake.wait_for_sent(2)
        finally:
            await team.stop()
        turns = await store.get(f"matrix:{room}")
    downloads = fake.calls_of("download")
    assert len(downloads) == 2 and all(c.status == 200 for c in downloads)
    assert "Invoice total: 42 EUR" in str(model.bodies[0]["messages"])
    [invoice] = files_of(turns[0].metadata.extra)
    assert invoice.name == "invoice.pdf" and invoice.media_type == "application/pdf"
    [huge] = files_of(turns[2].metadata.extra)
    assert huge.name == "huge.bin" and "over this channel's limit" in (huge.note or "")


async def test_a_chart_a_tool_made_is_uploaded_and_posted_once(
        fake: FakeMatrix, model: FakeAnthropic, sqlite_url: str) -> None:
    chart = png(300, 200)
    room = fake.add_room("Alice", members=[ALICE])
    async with SqlConversationStore(sqlite_url) as store:
        model.script(tool_use("draw_chart", {}), text("Here is the chart."))
        agent = Agent(name="support", conversation_history=store, tools=[chart_tool(chart)],
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=FileIntake(store=SqlFileStore(store)))
        team.attach(matrix_channel(fake, store))
        await team.start()
        try:
            fake.message(room, ALICE, "chart my sales please")
            await fake.wait_for_sent(2)
        finally:
            await team.stop()
        reply = (await store.get(f"matrix:{room}"))[-1]
    assert fake.uploads == [("sales.png", chart)]
    text_post, picture = fake.messages_sent()
    assert text_post.content["body"] == "Here is the chart."
    assert picture.content["msgtype"] == "m.image" and picture.content["body"] == "sales.png"
    assert picture.content["url"].startswith("mxc://fake.test/")
    assert reply.metadata.extra["part_ids"][-1] == picture.event_id
