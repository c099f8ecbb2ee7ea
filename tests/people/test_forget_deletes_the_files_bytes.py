"""A person's files go with them: `/forget-me` and `people forget` delete the bytes of the files
they sent (the row in the database and the file on disk), export carries the bytes, and a
picture someone else also sent stays until nobody's turn names it."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.files import pdf, png
from tests.fakes.telegram import ALICE, BOB, FakeTelegram, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.telegram import TelegramChannel
from threadline.history.files import sha256_of
from threadline.people.erase import export_person, forget_person
from threadline.team import Team


def kept_in_database(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute("SELECT sha256 FROM threadline_files")}


async def test_forget_me_and_people_forget_delete_the_bytes(tmp_path: Path) -> None:
    db, directory = tmp_path / "bot.db", tmp_path / "files"
    picture, invoice = png(1200, 900), pdf("Invoice 4417 for Alice")
    async with FakeTelegram() as fake, FakeAnthropic() as model, \
            SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        model.script(*[text("Noted.")] * 4)  # three answers, one description of the photo
        files = FileIntake(store=SqlFileStore(store, directory=directory, inline_max_bytes=1500))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client()))], files=files)
        team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
        await team.start()
        try:
            sent = 0
            for update in (
                    fake.media(private_chat(ALICE), ALICE, picture, kind="photo"),
                    fake.media(private_chat(ALICE), ALICE, invoice, kind="document",
                               name="invoice.pdf"),
                    fake.media(private_chat(BOB), BOB, picture, kind="photo")):
                await fake.deliver(update)
                sent += 1
                await fake.wait_for_calls("sendMessage", sent)
            photo_sha, pdf_sha = sha256_of(picture), sha256_of(invoice)
            assert kept_in_database(db) == {photo_sha, pdf_sha}  # the photo once, for both
            assert [p.name for p in directory.iterdir()] == [photo_sha]  # the PDF is inline
            assert len(picture) > 1500 >= len(invoice)

            exported = io.StringIO()
            await export_person(store, f"telegram:{ALICE.id}", exported)
            lines = [json.loads(line) for line in exported.getvalue().splitlines()]
            carried = {line["sha256"]: base64.b64decode(line["data_base64"])
                       for line in lines if line["kind"] == "file"}
            assert carried == {photo_sha: picture, pdf_sha: invoice}

            for words in ("/forget_me", "/forget_me confirm"):
                await fake.deliver(fake.message(private_chat(ALICE), ALICE, words))
                sent += 1
                await fake.wait_for_calls("sendMessage", sent)
            assert fake.sent[-1]["text"].startswith("Done: erased")
        finally:
            await team.stop()
        assert kept_in_database(db) == {photo_sha}  # Bob's turn still names the picture
        assert (directory / photo_sha).exists()

        await forget_person(store, f"telegram:{BOB.id}")
        assert kept_in_database(db) == set()
        assert list(directory.iterdir()) == []
