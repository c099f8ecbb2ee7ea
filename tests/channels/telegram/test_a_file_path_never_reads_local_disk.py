"""A Bot API server naming a local file cannot make the bot read it; a lying size is not trusted.

A hostile or proxied Bot API server answers getFile with `../../.env` or `/etc/passwd` (the
first one exists beside the working directory here, so python-telegram-bot would read it as a
local file): nothing is read from disk, the message is still answered with a note. A file
whose update claims a few bytes but whose body is larger than the channel's limit is
stopped at the limit and not kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, text
from tests.fakes.files import pdf
from tests.fakes.telegram import ALICE, FakeTelegram, private_chat
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.files import SqlFileStore
from threadline.channels.files import FileIntake
from threadline.channels.telegram import TelegramChannel
from threadline.history.files import files_of
from threadline.team import Team

CHAT = private_chat(ALICE)
SECRET = "ANTHROPIC_API_KEY=sk-ant-never-leaves"


async def _answer_all(tmp_path: Path, fake: FakeTelegram, model: FakeAnthropic,
                      store: SqlConversationStore, updates: list[dict[str, object]], *,
                      max_file_bytes: int = 20 * 1024 * 1024) -> None:
    team = Team([Agent(name="support", conversation_history=store,
                       provider=AnthropicProvider(model.client(), stream=False))],
                files=FileIntake(store=SqlFileStore(store, directory=tmp_path / "files"),
                                 max_file_bytes=max_file_bytes))
    team.attach(TelegramChannel(name="tg", **fake.channel_settings()))
    await team.start()
    try:
        for number, update in enumerate(updates, start=1):
            await fake.deliver(update)
            await fake.wait_for_calls("sendMessage", number)
    finally:
        await team.stop()


async def test_a_file_path_naming_a_local_file_reads_nothing_from_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text(SECRET + "\n", encoding="utf-8")
    working = tmp_path / "deploy" / "bot"
    working.mkdir(parents=True)
    monkeypatch.chdir(working)  # so ../../.env names the file above, as a config's .env
    async with FakeTelegram() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        model.script(text("I could not open that file."), text("Nor that one."))
        dotenv = fake.media(CHAT, ALICE, pdf("harmless"), kind="document", name="notes.pdf",
                            caption="read my notes")
        passwd = fake.media(CHAT, ALICE, pdf("harmless"), kind="document", name="users.pdf",
                            caption="read the users")
        fake.file_paths.update({"file-1": "../../.env", "file-2": "/etc/passwd"})
        await _answer_all(tmp_path, fake, model, store, [dotenv, passwd])
        prompts = [json.dumps(body) for body in model.bodies]
        turns = [t for t in await store.get(f"telegram:{CHAT.id}")
                 if t.participant.kind == "user"]
    assert fake.file_downloads == []
    assert len(prompts) == 2 and "read my notes" in prompts[0]
    for said in [*prompts, *(t.content for t in turns)]:
        assert "sk-ant-never-leaves" not in said and "root:" not in said
    for turn in turns:
        [file] = files_of(turn.metadata.extra)
        assert file.note and not file.sha256


async def test_a_file_larger_than_it_claims_is_stopped_at_the_limit(tmp_path: Path) -> None:
    limit = 64 * 1024
    async with FakeTelegram() as fake, FakeAnthropic() as model, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}") as store:
        model.script(text("That file is too large for me."))
        liar = fake.media(CHAT, ALICE, b"a" * (4 * limit), kind="document", name="small.txt",
                          caption="tiny file", declared_size=10)
        await _answer_all(tmp_path, fake, model, store, [liar], max_file_bytes=limit)
        [prompt] = [json.dumps(body) for body in model.bodies]
        [turn] = [t for t in await store.get(f"telegram:{CHAT.id}")
                  if t.participant.kind == "user"]
    assert "tiny file" in prompt
    assert "over this channel's limit of 0.1 MB (the download was stopped there)" in prompt
    [file] = files_of(turn.metadata.extra)
    assert file.note and not file.sha256  # nothing of it kept
