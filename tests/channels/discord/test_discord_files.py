"""Discord attachments reach the model: fetched from the CDN URL in the event.

A PNG arrives as an image block and a PDF as its text; the stored turn names both by hash, and
their bytes are kept. A PNG named `.pdf` is still a picture.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from yarl import URL

from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord
from tests.fakes.files import chart_tool, pdf, png
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.discord import DiscordChannel
from threadline.channels.files import FileIntake
from threadline.history.files import files_of
from threadline.team import Team


async def test_attachments_reach_the_model_and_are_kept(tmp_path: Path) -> None:
    picture, invoice = png(640, 480), pdf("Discord receipt 8812")
    async with FakeDiscord() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'd.db'}") as store:
        world = DiscordWorld.build(fake)
        model.script(text("A screenshot and a receipt."), text("A grey screenshot."))
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=files)
        team.attach(DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                   gateway_url=fake.gateway_url, guild_ready_timeout=0.02,
                                   file_hosts=[URL(fake.url).authority]))
        await team.start()
        try:
            await fake.deliver_message(
                world.general, author=world.ada, mentions=(fake.bot,),
                content=f"<@{fake.bot.id}> what do these say?",
                attachments=(fake.add_attachment(picture, name="screen.pdf"),
                             fake.add_attachment(invoice, name="receipt.pdf")))
            await fake.wait_for_posts(1)
        finally:
            await team.stop()
        assert len(fake.attachment_downloads) == 2
        body = json.dumps(model.bodies[0])
        assert base64.b64encode(picture).decode() in body  # sniffed a PNG despite its name
        assert "Discord receipt 8812" in body
        [turn] = [t for t in await store.get(f"discord:{world.guild.id}:{world.general}")
                  if t.participant.kind == "user"]
        screen, receipt = files_of(turn.metadata.extra)
        assert (screen.media_type, screen.width, screen.height) == ("image/png", 640, 480)
        assert receipt.media_type == "application/pdf"
        assert await files.store.get(receipt.sha256) == invoice


async def test_an_attachment_off_discords_hosts_is_not_fetched(tmp_path: Path) -> None:
    async with FakeDiscord() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'd.db'}") as store:
        world = DiscordWorld.build(fake)
        model.script(text("I could not open it."))
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=files)
        # No file_hosts: the fake's 127.0.0.1 is not Discord's CDN.
        team.attach(DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                   gateway_url=fake.gateway_url, guild_ready_timeout=0.02))
        await team.start()
        try:
            await fake.deliver_message(
                world.general, author=world.ada, mentions=(fake.bot,),
                content=f"<@{fake.bot.id}> what does this say?",
                attachments=(fake.add_attachment(pdf("secret"), name="a.pdf"),))
            await fake.wait_for_posts(1)
        finally:
            await team.stop()
    assert fake.attachment_downloads == []  # no request left for a host Discord does not use
    assert "secret" not in json.dumps(model.bodies[0])


async def test_a_chart_a_tool_made_is_attached_once(tmp_path: Path) -> None:
    chart = png(300, 200)
    draw_chart = chart_tool(chart)

    async with FakeDiscord() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'd.db'}") as store:
        world = DiscordWorld.build(fake)
        model.script(tool_use("draw_chart", {}), text("Here is the chart."))
        team = Team([Agent(name="support", conversation_history=store, tools=[draw_chart],
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=FileIntake(store=SqlFileStore(store)))
        team.attach(DiscordChannel(token=fake.token, api_base_url=fake.api_base_url,
                                   gateway_url=fake.gateway_url, guild_ready_timeout=0.02))
        await team.start()
        try:
            await fake.deliver_message(world.general, author=world.ada, mentions=(fake.bot,),
                                       content=f"<@{fake.bot.id}> chart my sales")
            await fake.wait_for_posts(2)
        finally:
            await team.stop()
        assert [(u["path"], u["filename"], u["data"]) for u in fake.uploaded] == [
            (f"/channels/{world.general}/messages", "sales.png", chart)]
        reply = (await store.get(f"discord:{world.guild.id}:{world.general}"))[-1]
        assert files_of(reply.metadata.extra)[0].name == "sales.png"
        assert len(reply.metadata.extra["part_ids"]) == 2  # the text and the attachment
