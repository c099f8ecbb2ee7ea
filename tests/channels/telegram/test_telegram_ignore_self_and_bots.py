"""The bot never hears itself; other bots are dropped unless allowed; chats posting as
themselves (anonymous admins) are people, not bots."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, BOT, GROUP, OTHER_BOT, FakeTelegram, TgUser
from threadline.channels.telegram import TelegramChannel

GROUP_ANONYMOUS_BOT = TgUser(1087968824, "Group", username="GroupAnonymousBot", is_bot=True)


async def start(fake: FakeTelegram, events: RecordingEvents, **settings: bool) -> TelegramChannel:
    channel = TelegramChannel(name="tg", **fake.channel_settings(), **settings)
    await channel.start(events)
    return channel


async def test_own_and_other_bots_messages_never_reach_events(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = await start(fake, events)
    try:
        await fake.deliver(fake.message(GROUP, BOT, "@support_bot talking to myself"))
        await fake.deliver(fake.message(GROUP, OTHER_BOT, "@support_bot from another bot"))
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot from a person"))
        person = await events.next_inbound()
        await events.drain()
    finally:
        await channel.stop()  # the earlier two were handled (or dropped) before this returns

    assert person.content == "@support_bot from a person"
    assert await events.store.count() == 1
    assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
        "echo: @support_bot from a person"]


async def test_other_bots_are_heard_when_allowed_but_never_itself(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = await start(fake, events, allow_bots=True)
    try:
        await fake.deliver(fake.message(GROUP, BOT, "@support_bot talking to myself"))
        await fake.deliver(fake.message(GROUP, OTHER_BOT, "@support_bot from another bot"))
        other = await events.next_inbound()
    finally:
        await channel.stop()

    assert other.participant.id == str(OTHER_BOT.id)
    assert await events.store.count() == 1


async def test_anonymous_admin_speaks_as_the_group(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = await start(fake, events)
    try:
        await fake.deliver(fake.message(GROUP, GROUP_ANONYMOUS_BOT, "@support_bot from an admin",
                                        sender_chat=GROUP))
        inbound = await events.next_inbound()
    finally:
        await channel.stop()

    assert inbound.participant.id == str(GROUP.id)
    assert inbound.participant.display_name == GROUP.title
