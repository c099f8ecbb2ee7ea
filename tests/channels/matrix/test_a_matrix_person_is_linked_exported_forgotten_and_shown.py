"""Matrix ids hold colons (`@alice:fake.test`, `!room:fake.test`, `$event`), and they work
wherever ids are used: a Matrix person who spoke through the real channel is linked to her
Telegram account, her person memory reaches from a DM into what she said in a room, the console
lists and shows the room's thread, her export holds her words, and forgetting her removes them
while Bob's stay."""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest

from tests.channels.matrix.rig import matrix_channel
from tests.cli.helpers import run_cli
from tests.fakes.matrix import ALICE, BOB, FakeMatrix
from tests.inspector.helpers import child_environment
from tests.launch import spawn
from threadline.agents import Agent, OfflineModel
from threadline.backends.parts import people_for, records_for
from threadline.backends.sql import SqlConversationStore
from threadline.history.model import Participant, StoredMessage
from threadline.inspector import ReplyRecorder
from threadline.people import person_memory_for
from threadline.people.erase import export_person
from threadline.team import Team

SECRET = "zanzibar"
IDENTITY = f"matrix:{ALICE}"


async def _speak(fake: FakeMatrix, url: str) -> tuple[str, str]:
    """Alice and Bob talk in a room's thread through the channel; the thread's conversation."""
    room = fake.add_room("Shop", members=[ALICE, BOB])
    root = fake.message(room, ALICE, "gate codes")
    async with SqlConversationStore(url) as store:
        recorder = ReplyRecorder(records_for(store))
        team = Team([Agent(name="support", conversation_history=store,
                           provider=OfflineModel(), observer=recorder)])
        team.attach(matrix_channel(fake, store), respond_to_all=["support"])
        await team.start()
        try:
            fake.message(room, ALICE, f"my gate code word is {SECRET}", thread=root["event_id"])
            fake.message(room, BOB, "I keep a pet quokka", thread=root["event_id"])
            await fake.wait_for_sent(2)
            await recorder.flush()
        finally:
            await team.stop()
    return room, f"matrix:{room}:{root['event_id']}"


async def _console_shows(url: str, tmp_path: Path, conversation: str) -> None:
    config = tmp_path / "console.yaml"
    config.write_text(f"store:\n  url: {url}\n", encoding="utf-8")
    process = await spawn("console", str(config), "--port", "0", cwd=tmp_path,
        env=child_environment({}), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        async with asyncio.timeout(60):
            while True:
                line = (await process.stderr.readline()).decode()
                assert line, "threadline console exited before saying where it is"
                found = re.search(r"(http://127\.0\.0\.1:\d+/console/)", line)
                if found:
                    break
        base = found.group(1)
        async with aiohttp.ClientSession() as session:
            async with session.get(base) as response:
                assert conversation in await response.text()
            async with session.get(f"{base}api/conversation?id={quote(conversation)}") as got:
                records = (await got.json())["records"]
            async with session.get(f"{base}conversation?id={quote(conversation)}") as page:
                assert page.status == 200 and "support" in await page.text()
        assert records and {r["agent"] for r in records} == {"support"}
    finally:
        process.terminate()
        await process.wait()


async def test_a_matrix_person_works_wherever_ids_are_used(
        sql_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeMatrix() as fake:
        _room, thread = await _speak(fake, sql_url)

    linked = await asyncio.to_thread(run_cli, capsys, "people", "link", IDENTITY,
                                     "telegram:456", "--url", sql_url)
    assert linked.code == 0, linked.err
    shown = await asyncio.to_thread(run_cli, capsys, "people", "show", "telegram:456",
                                    "--url", sql_url)
    assert IDENTITY in shown.out + shown.err

    async with SqlConversationStore(sql_url) as store:
        person = await people_for(store).person_of(IDENTITY)
        assert person is not None and set(person.identities) == {IDENTITY, "telegram:456"}
        asking = StoredMessage(conversation_id="telegram:456", scope="dm", content="my code?",
                               participant=Participant(kind="user", id="456"))
        memory = await person_memory_for(store, asking, by_meaning=False)
        assert memory is not None
        assert [m.content for m in await memory.search(f"gate code {SECRET}")] == [
            f"my gate code word is {SECRET}"]
        exported = io.StringIO()
        counts = await export_person(store, IDENTITY, exported)
        assert counts["turns"] == 1 and SECRET in exported.getvalue()
        assert all(json.loads(line) for line in exported.getvalue().splitlines())

    await _console_shows(sql_url, tmp_path, thread)

    forgot = await asyncio.to_thread(run_cli, capsys, "people", "forget", IDENTITY, "--url",
                                     sql_url, "--yes")
    assert forgot.code == 0, forgot.err
    async with SqlConversationStore(sql_url) as store:
        left = await store.get(thread)
        assert not any(SECRET in m.content for m in left)
        assert [m.content for m in left if m.participant.kind == "user"] == [
            "I keep a pet quokka"]
        assert await people_for(store).person_of(IDENTITY) is None
