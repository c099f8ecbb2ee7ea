"""Discord has no redelivery: a message whose turn could not be recorded is logged as lost,
naming it and saying what to do, and the channel goes on with the next one."""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore


async def test_a_message_that_was_not_recorded_is_logged_as_lost(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: None)
        events.refuse = lambda message: message.content == "lost one"
        with capture_logs() as logged:
            async with started_channel(fake, events):
                lost = await fake.deliver_message(world.general, author=world.ada,
                                                  content="lost one")
                await fake.deliver_message(world.general, author=world.ada, content="next")
                after = await events.next_inbound()
        stored = await store.get(after.conversation_id)

    [entry] = [e for e in logged if e["event"] == "discord.message_lost"]
    assert entry["log_level"] == "error"
    assert entry["message_id"] == int(lost["id"])
    assert entry["conversation_id"] == after.conversation_id
    assert "send the message again" in entry["what_to_do"]
    assert "exc_info" not in entry
    assert after.content == "next"
    assert [m.content for m in stored] == ["next"]
