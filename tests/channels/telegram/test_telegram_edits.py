"""A user's edit replaces the stored turn's text; it is not a new turn and gets no reply."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, FORUM, GROUP, FakeTelegram
from threadline.channels.telegram import TelegramChannel


@pytest.mark.parametrize("topic_id", [None, 31])
async def test_edit_replaces_the_stored_text(
    fake: FakeTelegram, events: RecordingEvents, topic_id: int | None
) -> None:
    chat = GROUP if topic_id is None else FORUM
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        original = fake.message(chat, ALICE, "@support_bot the deploy is at 5", topic_id=topic_id)
        await fake.deliver(original)
        inbound = await events.next_inbound()
        edit = fake.edit(original, "@support_bot the deploy is at 6")
        await fake.deliver(edit)
        await fake.wait_confirmed(edit)
    finally:
        await channel.stop()  # waits until the edit is handled

    assert events.edits == [(inbound.conversation_id, inbound.id,
                             "@support_bot the deploy is at 6")]
    [stored] = await events.store.get(inbound.conversation_id)
    assert stored.id == inbound.id
    assert stored.content == "@support_bot the deploy is at 6"
    assert len(fake.calls_to("sendMessage")) == 1
