"""Replies get through rate limits, are split under 2,000 characters, and fail clearly."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.discord_gateway import DiscordWorld, FakeDiscord, started_channel
from threadline.backends.sql import SqlConversationStore
from threadline.errors import ChannelPermanentError, InvalidMessageError
from threadline.history.model import Participant, StoredMessage


async def _one_inbound(fake: FakeDiscord, world: DiscordWorld,
                       events: RecordingEvents) -> StoredMessage:
    await fake.deliver_message(world.general, author=world.ada, content="question")
    return await events.next_inbound()


async def test_a_429_is_waited_out_and_the_reply_still_delivered(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        fake.fail_next("POST", r"/channels/\d+/messages", status=429, retry_after=0.05, times=2)
        events = RecordingEvents(store)
        async with started_channel(fake, events):
            await _one_inbound(fake, world, events)
            posts = await fake.wait_for_posts(1)

    attempts = fake.calls_to("POST", rf"/channels/{world.general}/messages")
    assert [c.status for c in attempts] == [429, 429, 200]
    assert [p["content"] for p in posts] == ["echo: question"]


async def test_a_long_reply_is_split_under_the_limit_and_reassembles(sqlite_url: str) -> None:
    paragraphs = [f"Paragraph {n}: " + "word " * 150 for n in range(12)]
    long_text = "\n\n".join(p.strip() for p in paragraphs)
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: long_text)
        async with started_channel(fake, events):
            inbound = await _one_inbound(fake, world, events)
            await events.drain()
        posts = fake.posts

    assert len(long_text) > 9000 and len(posts) >= 5
    assert all(len(p["content"]) <= 2000 for p in posts)
    assert " ".join(p["content"] for p in posts).split() == long_text.split()
    assert posts[0]["message_reference"]["message_id"] == int(inbound.metadata.message_id or 0)
    assert all("message_reference" not in p for p in posts[1:])
    assert events.sent == [[m["id"] for m in fake.posted]]


@pytest.mark.parametrize(("status", "says"), [(403, "Send Messages"), (404, "no longer exists")])
async def test_forbidden_or_gone_is_a_permanent_error_naming_the_conversation(
    sqlite_url: str, status: int, says: str
) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        world = DiscordWorld.build(fake)
        events = RecordingEvents(store, reply=lambda m: None)
        async with started_channel(fake, events, name="ops") as channel:
            inbound = await _one_inbound(fake, world, events)
            fake.fail_next("POST", r"/channels/\d+/messages", status=status, times=5)
            with pytest.raises(ChannelPermanentError) as raised:
                await channel.send_reply(inbound, "answer")

    assert inbound.conversation_id in str(raised.value)
    assert "'ops'" in str(raised.value) and says in str(raised.value)
    assert len(fake.calls_to("POST", r"/channels/\d+/messages")) == 1  # not retried


async def test_a_reply_to_another_platforms_message_is_refused(sqlite_url: str) -> None:
    async with FakeDiscord() as fake, SqlConversationStore(sqlite_url) as store:
        DiscordWorld.build(fake)
        async with started_channel(fake, RecordingEvents(store)) as channel:
            slack_turn = StoredMessage(conversation_id="slack:T1:C1",
                                       participant=Participant(kind="user", id="U1"),
                                       content="hi", metadata={"channel_type": "slack"})
            with pytest.raises(InvalidMessageError, match=r"slack:T1:C1.*'slack'"):
                await channel.send_reply(slack_turn, "answer")

    assert fake.posts == []
