"""The sync position is kept by the backend: a bot stopped and started again answers what was
said while it was away, once, and nothing it had answered before. Its first start answers no
history."""

from __future__ import annotations

from collections import Counter

from tests.channels.matrix.rig import matrix_channel, matrix_team
from tests.channels.recording import RecordingEvents
from tests.fakes.matrix import ALICE, FakeMatrix
from threadline.backends.parts import parts_of
from threadline.backends.sql import SqlConversationStore


async def test_a_restart_misses_nothing_and_repeats_nothing(sql_url: str) -> None:
    async with FakeMatrix() as fake:
        dm = fake.add_room("Alice", members=[ALICE])
        fake.message(dm, ALICE, "said before the bot ever ran")
        async with matrix_team(fake, sql_url):
            fake.message(dm, ALICE, "first question")
            await fake.wait_for_sent(1)
            await fake.wait_for_sync_past(fake.position)
        fake.message(dm, ALICE, "second question, while it is stopped")
        fake.message(dm, ALICE, "third question, while it is stopped")
        async with matrix_team(fake, sql_url):
            await fake.wait_for_sent(3)
            await fake.wait_for_sync_past(fake.position)
        async with matrix_team(fake, sql_url):  # a third run: nothing new, nothing again
            await fake.wait_for_sync_past(fake.position)
        sinces = fake.sync_requests
    assert sinces.count(None) == 1  # only the very first sync reads without a position
    async with SqlConversationStore(sql_url) as store:
        turns = await store.get(f"matrix:{dm}")
        kept = await parts_of(store).platform_part("matrix").position(  # type: ignore[union-attr]
            "@support:fake.test")
    asked = [t.content for t in turns if t.participant.kind == "user"]
    assert asked == ["first question", "second question, while it is stopped",
                     "third question, while it is stopped"]
    answered = Counter(t.id.partition(">")[0] for t in turns if t.participant.kind == "agent")
    assert len(answered) == 3 and set(answered.values()) == {1}
    assert kept == str(fake.position)


async def test_a_long_downtime_in_a_busy_room_is_read_back_whole(sqlite_url: str) -> None:
    """More new events than one sync carries: the gap is read back with /messages."""
    async with FakeMatrix() as fake, SqlConversationStore(sqlite_url) as store:
        room = fake.add_room("Busy", members=[ALICE, "@carol:fake.test"])
        events = RecordingEvents(store, reply=lambda message: None)
        first = matrix_channel(fake, store)
        await first.start(events)
        await first.stop()
        said = [f"message {n}" for n in range(250)]
        for words in said:
            fake.message(room, ALICE, words)
        again = matrix_channel(fake, store)
        await again.start(events)
        try:
            await fake.wait_for_sync_past(fake.position)
        finally:
            await again.stop()
        stored = await store.get(f"matrix:{room}", limit=1000)
    assert [m.content for m in stored] == said
    assert fake.messages_pages >= 2
