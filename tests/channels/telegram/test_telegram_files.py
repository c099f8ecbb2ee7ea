"""People send a Telegram bot a screenshot, a PDF invoice and a voice note, through the real SDK.

Each file is fetched by getFile and the file route of the fake Bot API, kept once by hash,
and reaches the model: the picture as an image block, the PDF as its text, the voice note as
its transcript (a fake speech endpoint). The stored turns name their files, and after a restart
the bytes are still there. A file over the limit is refused with a note and the text is still
answered; a PNG named `.pdf` is a picture.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.files import chart_tool, ogg_voice, pdf, png
from tests.fakes.openai import FakeOpenAI
from tests.fakes.telegram import ALICE, FakeTelegram, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.speech import SpeechToText
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.telegram import TelegramChannel
from threadline.history.files import files_of
from threadline.team import Team

CHAT = private_chat(ALICE)


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]


async def _run(url: str, tmp_path: Path, fake: FakeTelegram, model: FakeAnthropic,
               speech: FakeOpenAI, updates: list[dict[str, Any]], *,
               max_file_bytes: int = 20 * 1024 * 1024) -> None:
    async with SqlConversationStore(url) as store:
        files = FileIntake(
            store=SqlFileStore(store, directory=tmp_path / "files", inline_max_bytes=200),
            max_file_bytes=max_file_bytes,
            transcribe=SpeechToText(base_url=speech.url, model="whisper-test"))
        agent = Agent(name="support", conversation_history=store,
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=files)
        team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
        await team.start()
        try:
            for number, update in enumerate(updates, start=1):
                await fake.deliver(update)
                await fake.wait_for_calls("sendMessage", number)  # answered in turn
        finally:
            await team.stop()


async def test_a_photo_a_pdf_and_a_voice_note_reach_the_model_and_stay(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    picture = png(800, 600)
    invoice = pdf("Invoice 4417 total 99 EUR")
    async with FakeTelegram() as fake, FakeAnthropic() as model, FakeOpenAI() as speech:
        model.script(text("I see the error."), text("A dialog saying Error 500."),
                     text("Your total is 99 EUR."), text("Noted."))
        updates = [
            fake.media(CHAT, ALICE, picture, kind="photo", caption="what is this error?"),
            fake.media(CHAT, ALICE, invoice, kind="document", name="invoice.pdf"),
            fake.media(CHAT, ALICE, ogg_voice(), kind="voice"),
        ]
        await _run(url, tmp_path, fake, model, speech, updates)
        assert fake.file_downloads == ["file-1", "file-2", "file-3"]

        first, describe, second, third = model.bodies
        images = [b for b in _blocks(first) if b["type"] == "image"]
        assert images == [{"type": "image", "source": {
            "type": "base64", "media_type": "image/png",
            "data": base64.b64encode(picture).decode()}}]
        assert "Invoice 4417 total 99 EUR" in json.dumps(second)
        assert [b["type"] for b in _blocks(describe)] == ["image", "text"]
        assert not [b for b in _blocks(second) if b["type"] == "image"]  # sent once
        # later prompts read the description the model wrote once, not the picture
        assert "[image photo-1.jpg, 800x600: A dialog saying Error 500.]" in json.dumps(second)
        assert "this is what the voice note says" in json.dumps(third)
        assert speech.heard == [("whisper-test", ogg_voice())]

    async with SqlConversationStore(url) as store:  # a restart: a new store on the same file
        turns = [t for t in await store.get(f"telegram:{CHAT.id}")
                 if t.participant.kind == "user"]
        photo, document, voice = (files_of(t.metadata.extra)[0] for t in turns)
        assert (photo.media_type, photo.width, photo.height) == ("image/png", 800, 600)
        assert document.media_type == "application/pdf"
        # Recorded as taken in before the ack (read later): what was heard is the turn's text.
        assert voice.sha256 and voice.media_type == "audio/ogg"
        assert turns[2].content.startswith("this is what the voice note says")
        assert await store.search(f"telegram:{CHAT.id}", "error 500")  # the description
        kept = SqlFileStore(store, directory=tmp_path / "files", inline_max_bytes=200)
        assert await kept.get(photo.sha256) == picture
        assert await kept.get(document.sha256) == invoice
        assert await kept.get(voice.sha256) == ogg_voice()
        assert (tmp_path / "files" / photo.sha256).read_bytes() == picture  # over 200 bytes
        found = await store.search(f"telegram:{CHAT.id}", "invoice 4417")
        assert [m.id for m in found] == [turns[1].id]  # the PDF's text is searchable


async def test_a_file_over_the_limit_is_refused_and_the_text_still_answered(
        tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    async with FakeTelegram() as fake, FakeAnthropic() as model, FakeOpenAI() as speech:
        model.script(text("I could not take the file, but here is help."), text("A picture."),
                     text("A grey square."))
        huge = fake.media(CHAT, ALICE, b"%PDF-1.4 big", kind="document", name="scan.pdf",
                          caption="please read my scan", declared_size=30 * 1024 * 1024)
        disguised = fake.media(CHAT, ALICE, png(), kind="document", name="invoice.pdf")
        await _run(url, tmp_path, fake, model, speech, [huge, disguised])
        assert fake.file_downloads == ["file-2"]  # the 30 MB file was never fetched
        prompt = json.dumps(model.bodies[0])
        assert "please read my scan" in prompt
        assert "30.0 MB is over this channel's limit of 20.0 MB" in prompt
        assert [b["type"] for b in _blocks(model.bodies[1])
                if b["type"] == "image"] == ["image"]
    async with SqlConversationStore(url) as store:
        turns = [t for t in await store.get(f"telegram:{CHAT.id}")
                 if t.participant.kind == "user"]
        refused, picture = (files_of(t.metadata.extra)[0] for t in turns)
        assert refused.note and not refused.sha256
        assert picture.media_type == "image/png" and picture.name == "invoice.pdf"


async def test_a_voice_note_the_speech_endpoint_fails_on_is_kept_and_still_answered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    async with FakeTelegram() as fake, FakeAnthropic() as model, FakeOpenAI() as speech:
        speech.transcription_status = 503
        model.script(text("I could not hear that; could you type it?"))
        await _run(url, tmp_path, fake, model, speech,
                   [fake.media(CHAT, ALICE, ogg_voice(), kind="voice")])
        assert len(speech.heard) == 2  # the SDK's one retry, then it gave up
        prompt = json.dumps(model.bodies[0])
        assert "not transcribed]" in prompt and "voice note says" not in prompt
        assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
            "I could not hear that; could you type it?"]
    assert "files.transcription_failed" in capsys.readouterr().out
    async with SqlConversationStore(url) as store:
        [turn] = [t for t in await store.get(f"telegram:{CHAT.id}")
                  if t.participant.kind == "user"]
        [voice] = files_of(turn.metadata.extra)
        assert not voice.transcribed and voice.sha256
        kept = SqlFileStore(store, directory=tmp_path / "files", inline_max_bytes=200)
        assert await kept.get(voice.sha256) == ogg_voice()  # the audio is kept


async def test_a_chart_a_tool_made_is_sent_once_with_sendphoto(tmp_path: Path) -> None:
    chart = png(300, 200)
    draw_chart = chart_tool(chart)

    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    async with FakeTelegram() as fake, FakeAnthropic() as model, \
            SqlConversationStore(url) as store:
        model.script(tool_use("draw_chart", {}), text("Here is the chart."))
        agent = Agent(name="support", conversation_history=store, tools=[draw_chart],
                      provider=AnthropicProvider(model.client(), stream=False))
        team = Team([agent], files=FileIntake(store=SqlFileStore(store)))
        team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
        await team.start()
        try:
            await fake.deliver(fake.message(CHAT, ALICE, "chart my sales please"))
            await fake.wait_for_calls("sendPhoto", 1)
        finally:
            await team.stop()
        assert [(u["kind"], u["filename"], u["data"]) for u in fake.uploads] == [
            ("photo", "sales.png", chart)]
        assert len(fake.calls_to("sendMessage")) == 1  # the text, then the picture, once
        reply = (await store.get(f"telegram:{CHAT.id}"))[-1]
        [sent] = files_of(reply.metadata.extra)
        assert (sent.name, sent.media_type, sent.width) == ("sales.png", "image/png", 300)
        assert reply.metadata.extra["part_ids"][-1] == str(fake.uploads[0]["message_id"])
