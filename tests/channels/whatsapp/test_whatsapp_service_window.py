"""The 24-hour customer-service window: free-form posts go only within 24 hours of the
customer's last message, read from the history (so a restart or another replica sees the
same); outside it a post goes as the configured template, or is not sent and says why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.channels.recording import RecordingEvents
from tests.channels.whatsapp.conftest import ANA, url_of
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel
from threadline.channels.whatsapp.window import OutsideServiceWindow
from threadline.history.model import StoredMessage
from threadline.schedules.turns import SCHEDULE_PARTICIPANT


class Clock:
    """The channel's time, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def scheduled_post(channel: WhatsAppChannel, conversation_id: str) -> StoredMessage:
    """A schedule's turn in the conversation, as the scheduler makes it."""
    return StoredMessage(conversation_id=conversation_id, participant=SCHEDULE_PARTICIPANT,
                         content="Your order ships today", id="schedule:s1:slot1",
                         metadata=channel.metadata_for(conversation_id))


async def started(fake: FakeWhatsApp, events: RecordingEvents, store: SqlConversationStore,
                  clock: Clock, **settings: str) -> WhatsAppChannel:
    channel = WhatsAppChannel(name="wa", **{**fake.channel_settings(), **settings},
                              webhook_port=0, history=store, clock=clock)
    await channel.start(events)
    return channel


async def test_a_post_within_24_hours_of_the_customers_message_is_sent_free_form(
        fake: FakeWhatsApp, events: RecordingEvents, store: SqlConversationStore) -> None:
    clock = Clock()
    channel = await started(fake, events, store, clock)
    try:
        await fake.deliver(url_of(channel), fake.text_message(ANA, "where is my parcel?"))
        turn = await events.next_inbound()
        await events.drain()
        clock.now += timedelta(hours=23)
        ids = await channel.send_reply(scheduled_post(channel, turn.conversation_id),
                                       "Your order ships today")
    finally:
        await channel.stop()
    assert ids == [fake.sent[-1].wamid] and fake.sent[-1].type == "text"


async def test_a_post_outside_the_window_without_a_template_is_not_sent_and_says_why(
        fake: FakeWhatsApp, events: RecordingEvents, store: SqlConversationStore) -> None:
    clock = Clock()
    channel = await started(fake, events, store, clock)
    try:
        await fake.deliver(url_of(channel), fake.text_message(ANA, "where is my parcel?"))
        turn = await events.next_inbound()
        await events.drain()
        sent_before = len(fake.sent)
        clock.now += timedelta(hours=25)
        post = scheduled_post(channel, turn.conversation_id)
        with pytest.raises(OutsideServiceWindow, match="24-hour customer-service window"):
            await channel.send_reply(post, "Your order ships today")
        with pytest.raises(OutsideServiceWindow):  # tried again: still not sent, said once
            await channel.send_reply(post, "Your order ships today")
    finally:
        await channel.stop()
    assert len(fake.sent) == sent_before
    notes = [t for t in await store.get(turn.conversation_id)
             if t.participant.kind == "system"]
    assert len(notes) == 1 and "not sent" in notes[0].content
    assert "channels.wa.window_template" in notes[0].content


async def test_a_reply_to_a_message_a_day_old_is_not_sent_free_form(
        fake: FakeWhatsApp, events: RecordingEvents, store: SqlConversationStore) -> None:
    clock = Clock()
    channel = await started(fake, events, store, clock)
    try:
        long_ago = (clock.now - timedelta(hours=30)).timestamp()
        await fake.deliver(url_of(channel), fake.text_message(ANA, "hello?", sent_at=long_ago))
        await events.drain()
    finally:
        await channel.stop()
    assert fake.sent == []
    [failure] = events.reply_failures
    assert isinstance(failure, OutsideServiceWindow)


async def test_outside_the_window_the_post_goes_as_the_template(
        fake: FakeWhatsApp, events: RecordingEvents, store: SqlConversationStore) -> None:
    clock = Clock()
    channel = await started(fake, events, store, clock, window_template="order_update",
                            window_template_language="es")
    try:
        await fake.deliver(url_of(channel), fake.text_message(ANA, "where is my parcel?"))
        turn = await events.next_inbound()
        await events.drain()
        clock.now += timedelta(days=3)
        await channel.send_reply(scheduled_post(channel, turn.conversation_id),
                                 "Your order\n\nships    today")
    finally:
        await channel.stop()
    template = fake.sent[-1]
    assert template.type == "template"
    assert template.body["template"]["name"] == "order_update"
    assert template.body["template"]["language"] == {"code": "es"}
    assert template.text == "[template order_update] Your order ships today"


async def test_the_window_survives_a_restart(fake: FakeWhatsApp, events: RecordingEvents,
                                             store: SqlConversationStore) -> None:
    clock = Clock()
    first = await started(fake, events, store, clock)
    try:
        await fake.deliver(url_of(first), fake.text_message(ANA, "where is my parcel?"))
        turn = await events.next_inbound()
        await events.drain()
    finally:
        await first.stop()
    clock.now += timedelta(hours=20)
    second = await started(fake, events, store, clock)  # a new process on the same store
    try:
        await second.send_reply(scheduled_post(second, turn.conversation_id), "It ships today")
    finally:
        await second.stop()
    assert fake.sent[-1].text == "It ships today"
