"""A group message addressed to the bot becomes one stored turn and a reply in its chat."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, BOB, GROUP, FakeTelegram
from threadline.channels.telegram import TelegramChannel


async def test_mention_in_group_is_stored_and_answered_in_reply(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    update = fake.message(GROUP, ALICE, "@support_bot what is the status?")
    await fake.deliver(update)

    inbound = await events.next_inbound()
    [call] = await fake.wait_for_calls("sendMessage", 1)

    assert inbound.conversation_id == f"telegram:{GROUP.id}"
    assert inbound.id == f"telegram:{GROUP.id}:{update['message']['message_id']}"
    assert inbound.scope == "channel"
    assert inbound.participant.id == str(ALICE.id)
    assert inbound.participant.display_name == "Alice"
    assert inbound.metadata.mentions == ("@support_bot", "4242")
    assert inbound.metadata.channel_name == GROUP.title
    assert call.params["chat_id"] == GROUP.id
    assert call.params["text"] == "echo: @support_bot what is the status?"
    assert call.params["reply_parameters"]["message_id"] == update["message"]["message_id"]
    assert "parse_mode" not in call.params
    stored = await events.store.get(inbound.conversation_id)
    assert [m.id for m in stored] == [inbound.id]


async def test_text_mention_resolves_to_the_user_id(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    text = "Bob, can you look?"
    await fake.deliver(fake.message(GROUP, ALICE, text, text_mentions=[("Bob", BOB)]))

    inbound = await events.next_inbound()

    assert inbound.content == "Bob, can you look?"
    assert inbound.metadata.mentions == (str(BOB.id),)


async def test_mention_of_the_bot_matches_its_aliases_whatever_the_case(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(GROUP, ALICE, "hey @Support_Bot and @alice"))

    inbound = await events.next_inbound()

    assert inbound.metadata.mentions == ("@support_bot", "4242", "@alice")
    assert channel.identity is not None
    assert set(inbound.metadata.mentions[:2]) <= set(channel.identity.aliases)


async def test_reply_to_the_bot_names_the_bot_as_replied_to(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot hello"))
    await events.next_inbound()
    await fake.wait_for_calls("sendMessage", 1)
    bot_reply = fake.sent[0]

    await fake.deliver(fake.message(GROUP, ALICE, "thanks, and then?", reply_to=bot_reply))
    follow_up = await events.next_inbound()

    assert follow_up.metadata.mentions == ()
    assert follow_up.metadata.reply_to_message_id == str(bot_reply["message_id"])
    assert follow_up.metadata.reply_to_participant_id == "4242"


async def test_reply_to_a_person_names_that_person(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    original = fake.message(GROUP, BOB, "I think it is fixed")
    await fake.deliver(original)
    await events.next_inbound()

    await fake.deliver(fake.message(GROUP, ALICE, "are you sure?", reply_to=original["message"]))
    reply = await events.next_inbound()

    assert reply.metadata.reply_to_participant_id == str(BOB.id)


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("/ask@support_bot what now", ("@support_bot", "4242")),
        ("/ask what now", ("@support_bot", "4242")),  # a bare command is for every bot
        ("/ask@other_bot what now", ("@other_bot",)),
        ("please /ask later", ()),  # not a command addressed to anyone: not at the start
    ],
)
async def test_commands_address_the_bot_they_name(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel,
    text: str, mentions: tuple[str, ...],
) -> None:
    await fake.deliver(fake.message(GROUP, ALICE, text))

    inbound = await events.next_inbound()

    assert inbound.content == text
    assert inbound.metadata.mentions == mentions


async def test_mentions_after_emoji_use_telegram_utf16_offsets(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel
) -> None:
    await fake.deliver(fake.message(GROUP, ALICE, "🎉🎉 @support_bot party"))

    inbound = await events.next_inbound()

    assert inbound.metadata.mentions == ("@support_bot", "4242")
