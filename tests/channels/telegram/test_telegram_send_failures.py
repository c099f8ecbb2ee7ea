"""Replies survive rate limits, are split under Telegram's limit, and permanent failures stop
with an error naming the conversation instead of retrying."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, GROUP, MAX_TEXT, FakeTelegram, private_chat
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel
from threadline.errors import ChannelPermanentError
from threadline.history.model import StoredMessage


@pytest.fixture
async def events(sqlite_url: str) -> AsyncIterator[RecordingEvents]:
    async with SqlConversationStore(sqlite_url) as store:
        yield RecordingEvents(store, reply=lambda m: None)  # the tests reply themselves


async def inbound_from(fake: FakeTelegram, events: RecordingEvents) -> StoredMessage:
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot tell me everything"))
    return await events.next_inbound()


async def test_rate_limit_is_waited_out_and_the_reply_delivered(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    inbound = await inbound_from(fake, events)
    fake.fail("sendMessage", error_code=429, retry_after=1,
              description="Too Many Requests: retry after 1")

    ids = await channel.send_reply(inbound, "here it is")

    calls = fake.calls_to("sendMessage")
    assert [c.status for c in calls] == [429, 200]
    assert calls[1].params["text"] == "here it is"
    assert ids == [str(fake.sent[0]["message_id"])]


async def test_long_reply_is_split_under_the_limit_and_reassembles(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    inbound = await inbound_from(fake, events)
    paragraphs = [f"Paragraph {n}: " + "word " * 180 for n in range(60)]
    text = "\n\n".join(p.strip() for p in paragraphs)

    ids = await channel.send_reply(inbound, text)

    texts = [c.params["text"] for c in fake.calls_to("sendMessage")]
    assert len(texts) == len(ids) > 1
    assert all(len(t) <= MAX_TEXT for t in texts)
    assert "\n\n".join(texts) == text
    assert ids == [str(m["message_id"]) for m in fake.sent]
    assert all(c.params["reply_parameters"]["message_id"] == int(inbound.metadata.message_id or 0)
               for c in fake.calls_to("sendMessage"))


@pytest.mark.parametrize(
    ("code", "description"),
    [
        (403, "Forbidden: bot was kicked from the supergroup chat"),
        (403, "Forbidden: bot was blocked by the user"),
        (400, "Bad Request: chat not found"),
        (400, "Bad Request: message is too long"),
    ],
)
async def test_permanent_failure_raises_naming_the_conversation_without_retrying(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel,
    code: int, description: str,
) -> None:
    inbound = await inbound_from(fake, events)
    fake.fail("sendMessage", error_code=code, description=description)

    with pytest.raises(ChannelPermanentError) as raised:
        await channel.send_reply(inbound, "hello")

    assert inbound.conversation_id in str(raised.value)
    # PTB drops Telegram's "Bad Request: " prefix; the reason itself must be there.
    assert description.split(": ", 1)[1].lower() in str(raised.value).lower()
    assert "'tg'" in str(raised.value)
    assert len(fake.calls_to("sendMessage")) == 1


async def test_failure_midway_says_how_much_of_the_reply_was_posted(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(private_chat(ALICE), ALICE, "hi"))
    inbound = await events.next_inbound()
    fake.fail("sendMessage", error_code=403, description="Forbidden: bot was blocked by the user",
              after=1)

    with pytest.raises(ChannelPermanentError, match="part 2 of 2"):
        await channel.send_reply(inbound, "a" * 3000 + "\n\n" + "b" * 3000)

    assert [c.status for c in fake.calls_to("sendMessage")] == [200, 403]


async def test_group_upgraded_to_supergroup_names_the_new_conversation(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    inbound = await inbound_from(fake, events)
    fake.fail("sendMessage", error_code=400, migrate_to_chat_id=-1009999,
              description="Bad Request: group chat was upgraded to a supergroup chat")

    with pytest.raises(ChannelPermanentError, match="telegram:-1009999"):
        await channel.send_reply(inbound, "hello")
