"""A reply record is written a moment after its turn (`gather_seconds`), together with the
records of the turns answered meanwhile: one write for them all, none on a turn's path. A
flush, or stopping (`close`, as the runtime's stop does), writes what waits at once; each
record is written once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from structlog.testing import capture_logs

from threadline.agents import Agent, OfflineModel
from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.channels.local import LocalChannel
from threadline.inspector import ReplyRecorder
from threadline.inspector.records import ReplyRecords
from threadline.team import Team

NEVER = 3600.0  # a gathering the test's clock never lets run out


@asynccontextmanager
async def recorded_room(tmp_path: Path, *, gather_seconds: float) -> AsyncIterator[
        tuple[LocalChannel, ReplyRecorder, ReplyRecords]]:
    """A local room answered by one agent whose turns `recorder` records; the team is stopped
    on the way out, the recorder is not."""
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'records.db'}") as store:
        records = records_for(store)
        assert records is not None
        recorder = ReplyRecorder(records, gather_seconds=gather_seconds)
        team = Team([Agent(name="support", conversation_history=store, provider=OfflineModel(),
                           observer=recorder)])
        room = LocalChannel(name="local", room="shop")
        team.attach(room)
        await team.start()
        try:
            yield room, recorder, records
        finally:
            await team.stop()


async def inbound_texts(records: ReplyRecords) -> list[str]:
    """The inbound text of every record, oldest first, read back whole."""
    texts = []
    for listed in reversed(await records.recent()):
        whole = await records.get(listed.id)
        assert whole is not None and whole.detail is not None
        texts.append(whole.detail["inbound"]["content"])
    return texts


async def test_the_records_of_turns_answered_meanwhile_share_one_write(tmp_path: Path) -> None:
    asked = [f"@support where is order {n}?" for n in (4401, 4402, 4403)]
    with capture_logs() as logs:
        async with recorded_room(tmp_path, gather_seconds=NEVER) as (room, recorder, records):
            for text in asked:
                await room.say(text, user="ada")
            assert await records.recent() == []  # answered, and nothing written on the way
            await recorder.flush()
            assert await inbound_texts(records) == asked
            await recorder.close()
    assert [e["count"] for e in logs if e["event"] == "inspector.recorded"] == [3]


async def test_stopping_writes_the_records_still_gathering_once(tmp_path: Path) -> None:
    async with recorded_room(tmp_path, gather_seconds=NEVER) as (room, recorder, records):
        await room.say("@support where is order 4401?", user="ada")
        await room.say("@support and order 4402?", user="ada")
        await recorder.close()
        await recorder.flush()  # nothing is left to write again
        assert await inbound_texts(records) == ["@support where is order 4401?",
                                                "@support and order 4402?"]


async def test_a_record_is_written_without_a_flush(tmp_path: Path) -> None:
    async with recorded_room(tmp_path, gather_seconds=0.01) as (room, recorder, records):
        await room.say("@support where is order 4401?", user="ada")
        async with asyncio.timeout(30):
            while not await records.recent():  # noqa: ASYNC110 - the writer runs on its own
                await asyncio.sleep(0.01)
        assert await inbound_texts(records) == ["@support where is order 4401?"]
        await recorder.close()
