"""Telegram replies are shown as the model writes them, within the per-chat rate, and stored once.

Private chats get message drafts ending in one real message; groups get one message edited as
the text grows. However fast the model, a chat is never changed more often than the configured
`stream_interval` (the fake refuses faster changes with a 429, as Telegram's flood control
does); a 429 that comes anyway is waited out and the reply completes. `typing` shows while the
model works.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest

from tests.channels.live_rig import (
    UNAVAILABLE_APOLOGY,
    live_team,
    replies_in,
    sqlite_store_fixture,
    words,
)
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, stream_error, text
from tests.fakes.telegram import ALICE, CHAT_CHANGES, GROUP, ApiCall, FakeTelegram, private_chat
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel

anthropic = fake_anthropic_fixture()
store = sqlite_store_fixture()
INTERVAL = 0.3


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.flood_interval = INTERVAL
        yield fake


def chat_changes(telegram: FakeTelegram, chat_id: int) -> list[ApiCall]:
    return [c for c in telegram.calls
            if c.method in CHAT_CHANGES and c.params.get("chat_id") == chat_id]


def assert_within_rate(changes: list[ApiCall]) -> None:
    gaps = [b.at - a.at for a, b in itertools.pairwise(changes)]
    assert min(gaps) >= INTERVAL, gaps
    assert all(c.status == 200 for c in changes), "no change was refused for flooding"


async def answer(telegram: FakeTelegram, channel: TelegramChannel, anthropic: FakeAnthropic,
                 store: SqlConversationStore, update: dict[str, object], *,
                 replies: int = 1) -> None:
    async with live_team(store, channel, anthropic):
        await telegram.deliver(update)
        await telegram.wait_for_calls("sendMessage", replies)


async def test_a_private_chat_sees_drafts_then_the_whole_reply_once(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(60)
    anthropic.script(text(reply, tokens_per_second=50))
    chat = private_chat(ALICE)
    channel = TelegramChannel(name="tg", **telegram.channel_settings(), stream_interval=INTERVAL)
    await answer(telegram, channel, anthropic, store, telegram.message(chat, ALICE, "hi"))
    drafts = telegram.calls_to("sendMessageDraft")
    assert len(drafts) >= 2
    assert drafts[0].at < anthropic.stream_ends[0], "text showed before the model finished"
    assert all(reply.startswith(d.params["text"]) for d in drafts)
    assert len({d.params["draft_id"] for d in drafts}) == 1
    [sent] = telegram.calls_to("sendMessage")
    assert sent.params["text"] == reply
    assert_within_rate(chat_changes(telegram, chat.id))
    [typing, *_] = telegram.calls_to("sendChatAction")
    assert typing.params["action"] == "typing" and typing.at < drafts[0].at
    [stored] = await replies_in(store, f"telegram:{chat.id}")
    assert stored.content == reply
    assert stored.metadata.message_id == str(telegram.sent[-1]["message_id"])


async def test_a_group_sees_one_message_edited_never_faster_than_the_rate(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(200)
    anthropic.script(text(reply, tokens_per_second=400))  # a fast model
    channel = TelegramChannel(name="tg", **telegram.channel_settings(), stream_interval=INTERVAL)
    await answer(telegram, channel, anthropic, store, telegram.message(GROUP, ALICE, "hi"))
    [posted] = telegram.calls_to("sendMessage")
    edits = telegram.calls_to("editMessageText")
    assert posted.at < anthropic.stream_ends[0], "text showed before the model finished"
    assert reply.startswith(posted.params["text"]) and posted.params["text"] != reply
    assert len(edits) >= 1 and edits[-1].params["text"] == reply
    assert_within_rate(chat_changes(telegram, GROUP.id))
    message_id = telegram.sent[-1]["message_id"]
    assert telegram.texts[(GROUP.id, message_id)] == reply
    [stored] = await replies_in(store, f"telegram:{GROUP.id}")
    assert (stored.content, stored.metadata.message_id) == (reply, str(message_id))


async def test_a_429_is_waited_out_and_the_reply_completes(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(80)
    anthropic.script(text(reply, tokens_per_second=50))
    telegram.fail("editMessageText", error_code=429, retry_after=1,
                  description="Too Many Requests: retry after 1")
    channel = TelegramChannel(name="tg", **telegram.channel_settings(), stream_interval=INTERVAL)
    await answer(telegram, channel, anthropic, store, telegram.message(GROUP, ALICE, "hi"))
    edits = telegram.calls_to("editMessageText")
    assert edits[0].status == 429
    assert edits[1].at - edits[0].at >= 1.0, "the retry came after retry_after"
    assert edits[-1].status == 200 and edits[-1].params["text"] == reply
    message_id = telegram.sent[-1]["message_id"]
    assert telegram.texts[(GROUP.id, message_id)] == reply
    [stored] = await replies_in(store, f"telegram:{GROUP.id}")
    assert stored.content == reply


async def test_a_model_error_mid_stream_ends_the_message_with_the_apology(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    anthropic.script(stream_error("overloaded_error", "Overloaded", after_text=words(40),
                                  tokens_per_second=50))
    channel = TelegramChannel(name="tg", **telegram.channel_settings(), stream_interval=INTERVAL)
    async with live_team(store, channel, anthropic):
        await telegram.deliver(telegram.message(GROUP, ALICE, "hi"))
        await telegram.wait_until_text(lambda shown: shown == UNAVAILABLE_APOLOGY)
    [posted] = telegram.calls_to("sendMessage")
    assert posted.params["text"].startswith("word0"), "part of the reply was shown"
    assert telegram.texts[(GROUP.id, telegram.sent[-1]["message_id"])] == UNAVAILABLE_APOLOGY
    [stored] = await replies_in(store, f"telegram:{GROUP.id}")
    assert stored.content == UNAVAILABLE_APOLOGY


async def test_with_streaming_off_a_group_gets_one_message_after_typing(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(40)
    anthropic.script(text(reply, tokens_per_second=50))
    channel = TelegramChannel(name="tg", **telegram.channel_settings(), streaming=False)
    await answer(telegram, channel, anthropic, store, telegram.message(GROUP, ALICE, "hi"))
    assert [c.params["text"] for c in chat_changes(telegram, GROUP.id)] == [reply]
    assert telegram.calls_to("sendChatAction")


async def test_typing_is_renewed_while_the_model_thinks(
        telegram: FakeTelegram, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    anthropic.script(text("It shipped on Monday.", delay=4.6))
    channel = TelegramChannel(name="tg", **telegram.channel_settings())
    await answer(telegram, channel, anthropic, store, telegram.message(GROUP, ALICE, "hi"))
    [sent] = telegram.calls_to("sendMessage")
    typing = telegram.calls_to("sendChatAction")
    assert [c.params["action"] for c in typing] == ["typing", "typing"]
    assert 3.5 <= typing[1].at - typing[0].at <= 4.5
    assert typing[1].at < sent.at
