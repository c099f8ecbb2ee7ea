"""A gateway frame nobody can decode costs the connection, not the messages sent meanwhile.

discord.py against the fake gateway: a frame cut short arrives, the channel closes that
connection and RESUMEs its session (no new IDENTIFY); the three messages Discord dispatched
while it was away are replayed and all answered. An event that can never be decoded is replayed
by every resume: then the channel identifies anew (what Discord dispatched in between is lost)
and says so in the log.
"""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_messages_sent_during_the_reconnect_are_all_answered(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        with capture_logs() as logs:
            async with started_channel(fake, events):
                fake.accepting.clear()  # the reconnect is slow: messages arrive meanwhile
                await fake.send_unreadable_frame()
                await fake.wait_until(lambda: fake.detached_sessions == 1)
                for words in ("one", "two", "three"):
                    await fake.deliver_message(world.general, author=world.ada, content=words)
                fake.accepting.set()
                turns = [await events.next_inbound() for _ in range(3)]
                await fake.wait_for_posts(3)

    assert [t.content for t in turns] == ["one", "two", "three"]
    assert [p["content"] for p in fake.posts] == ["echo: one", "echo: two", "echo: three"]
    assert fake.resumes == 1 and sum(fake.identifies.values()) == 1
    said = [entry["event"] for entry in logs]
    assert "discord.frame_unreadable" in said and "discord.session_resumed" in said
    assert "discord.session_not_resumed" not in said


async def test_an_event_that_never_decodes_is_passed_and_the_log_says_so(
        sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store)
        with capture_logs() as logs:
            async with started_channel(fake, events):
                depth = 50_000
                await fake.deliver_raw("MESSAGE_CREATE",
                                       '{"id": "1", "nested": ' + "[" * depth + "]" * depth + "}")
                # discord.py waits 5 s before identifying again (Discord's identify limit).
                await fake.wait_until(lambda: sum(fake.identifies.values()) == 2, within=60)
                await fake.deliver_message(world.general, author=world.ada, content="after")
                turn = await events.next_inbound()
                await fake.wait_for_posts(1)

    assert turn.content == "after"
    assert fake.resumes == 1 and sum(fake.identifies.values()) == 2
    [refused] = [entry for entry in logs if entry["event"] == "discord.session_not_resumed"]
    assert refused["reason"] == "the same frame could not be read after resuming"
