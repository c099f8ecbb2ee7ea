"""Files through WhatsApp's media endpoint: a customer's picture, PDF and voice note are found
by their media id (GET /MEDIA_ID gives a URL), fetched with the token, kept and read; a URL
naming another host is refused without the token; a chart an agent's tool made is uploaded
and sent as an image."""

from __future__ import annotations

import json
from pathlib import Path

from tests.channels.whatsapp.conftest import ANA
from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.files import chart_tool, ogg_voice, pdf, png
from tests.fakes.openai import FakeOpenAI
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.speech import SpeechToText
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.whatsapp import WhatsAppChannel
from threadline.history.files import files_of
from threadline.team import Team


async def test_a_picture_a_pdf_and_a_voice_note_reach_the_model(tmp_path: Path) -> None:
    picture, invoice = png(640, 480), pdf("Invoice 5521 total 42 EUR")
    async with FakeWhatsApp() as fake, FakeAnthropic() as model, FakeOpenAI() as speech, \
            SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        model.script(text("A chart."), text("I see it."), text("42 EUR."), text("Noted."))
        files = FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"),
                           transcribe=SpeechToText(base_url=speech.url, model="whisper-test"))
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=files)
        channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                                  history=store)
        team.attach(channel)
        await team.start()
        try:
            bodies = [
                fake.media_message(ANA, "image", fake.add_media(picture, "image/png"),
                                   caption="what is this?"),
                fake.media_message(ANA, "document", fake.add_media(invoice, "application/pdf"),
                                   filename="invoice.pdf"),
                fake.media_message(ANA, "audio", fake.add_media(ogg_voice(), "audio/ogg"),
                                   voice=True)]
            for number, body in enumerate(bodies, 1):
                assert channel.webhook_url is not None
                assert await fake.deliver(channel.webhook_url, body) == (200, "ok")
                await fake.wait_for_sent(number, within=30)  # a PDF is read in a child
        finally:
            await team.stop()
        turns = [t for t in await store.get(f"whatsapp:{fake.phone_number_id}:{ANA.wa_id}")
                 if t.participant.kind == "user"]
        photo, document, voice = (files_of(t.metadata.extra)[0] for t in turns)
        assert (photo.media_type, photo.width, photo.name) == ("image/png", 640, "image.jpg")
        assert (document.media_type, document.name) == ("application/pdf", "invoice.pdf")
        assert (voice.media_type, voice.name) == ("audio/ogg", "voice.ogg")
        kept = SqlFileStore(store, directory=tmp_path / "files")
        assert await kept.get(photo.sha256) == picture
        assert "Invoice 5521 total 42 EUR" in json.dumps(model.bodies)
        assert speech.heard == [("whisper-test", ogg_voice())]
        assert turns[0].content.startswith("what is this?")


async def test_a_media_url_on_another_host_is_refused_and_gets_no_token(
        tmp_path: Path) -> None:
    async with FakeWhatsApp() as fake, FakeWhatsApp() as elsewhere, FakeAnthropic() as model, \
            SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        model.script(text("I could not open it."))
        media_id = fake.add_media(png(), "image/png")
        # The media endpoint names a file on another server (a forged or confused answer).
        elsewhere.media[media_id] = fake.media[media_id]
        fake.media_url_host = elsewhere.url
        channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                                  history=store)
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client(), stream=False))],
                    files=FileIntake(store=SqlFileStore(store)))
        team.attach(channel)
        await team.start()
        try:
            assert channel.webhook_url is not None
            body = fake.media_message(ANA, "image", media_id, caption="look")
            assert await fake.deliver(channel.webhook_url, body) == (200, "ok")
            await fake.wait_for_sent(1)  # the words are answered all the same
        finally:
            await team.stop()
        assert elsewhere.file_requests == []  # never connected there, so no token went
        turn, _ = await store.get(f"whatsapp:{fake.phone_number_id}:{ANA.wa_id}")
        [refused] = files_of(turn.metadata.extra)
        assert "not fetched" in refused.note and not refused.sha256


async def test_a_chart_a_tool_made_is_uploaded_and_sent_as_an_image(tmp_path: Path) -> None:
    chart = png(300, 200)
    async with FakeWhatsApp() as fake, FakeAnthropic() as model, \
            SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        model.script(tool_use("draw_chart", {}), text("Here is the chart."))
        agent = Agent(name="support", conversation_history=store, tools=[chart_tool(chart)],
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=FileIntake(store=SqlFileStore(store)))
        channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                                  history=store)
        team.attach(channel)
        await team.start()
        try:
            assert channel.webhook_url is not None
            await fake.deliver(channel.webhook_url, fake.text_message(ANA, "chart my sales"))
            await fake.wait_for_sent(2)
        finally:
            await team.stop()
        text_reply, image = fake.sent
        assert text_reply.text == "Here is the chart."
        assert image.type == "image" and fake.media[image.body["image"]["id"]] == (
            chart, "image/png")
