"""Text in and out: ids, replies, redeliveries, batches, unreadable parts, the 503 when a turn
could not be recorded, read receipts and typing, and the rate limits waited out."""

from __future__ import annotations

from tests.channels.recording import RecordingEvents
from tests.channels.whatsapp.conftest import ANA, BO, url_of
from tests.fakes.whatsapp import PHONE_NUMBER_ID, FakeWhatsApp
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel


async def test_a_text_becomes_a_turn_with_stable_ids_and_is_answered_to_its_author(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    body = fake.text_message(ANA, "Do you ship to Lyon?", wamid="wamid.HBgL1==")
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    turn = await events.next_inbound()
    assert turn.id == "whatsapp:wamid.HBgL1=="
    assert turn.conversation_id == f"whatsapp:{PHONE_NUMBER_ID}:{ANA.wa_id}"
    assert (turn.participant.id, turn.participant.display_name) == (ANA.wa_id, "Ana")
    assert turn.scope == "dm" and turn.metadata.message_id == "wamid.HBgL1=="
    await events.drain()
    [sent] = fake.sent
    assert (sent.to, sent.text) == (ANA.wa_id, "echo: Do you ship to Lyon?")
    assert "context" not in sent.body  # a plain message in a 1:1 chat is not quoted


async def test_the_same_webhook_twice_is_one_turn_and_one_reply(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents,
        store: SqlConversationStore) -> None:
    body = fake.text_message(ANA, "hello")
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    await events.drain()
    assert len(fake.sent) == 1 and await store.count() == 1


async def test_every_message_of_a_batched_post_is_taken_even_past_an_unreadable_one(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    first, second = (fake.text_message(person, f"hi from {person.name}")
                     for person in (ANA, BO))
    change = first["entry"][0]["changes"][0]["value"]
    other = second["entry"][0]["changes"][0]["value"]
    change["contacts"] += other["contacts"]
    change["messages"] += [{"id": "wamid.BROKEN", "from": BO.wa_id, "type": "text",
                            "text": "not an object"}, *other["messages"]]
    assert await fake.deliver(url_of(channel), first) == (200, "ok")
    await events.drain()
    assert sorted((s.to, s.text) for s in fake.sent) == [
        (ANA.wa_id, "echo: hi from Ana"), (BO.wa_id, "echo: hi from Bo")]
    assert channel.skipped_events == 1


async def test_a_turn_not_recorded_is_answered_503_and_taken_when_delivered_again(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    body = fake.text_message(ANA, "are you there?")
    events.refuse = lambda message: True
    status, _ = await fake.deliver(url_of(channel), body)
    assert status == 503 and fake.sent == []
    events.refuse = lambda message: False
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    await events.drain()
    assert [s.text for s in fake.sent] == ["echo: are you there?"]


async def test_a_reply_to_a_message_quotes_the_customers_message(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    body = fake.text_message(ANA, "and this one?", context="wamid.EARLIER==")
    await fake.deliver(url_of(channel), body)
    turn = await events.next_inbound()
    assert turn.metadata.reply_to_message_id == "wamid.EARLIER=="
    assert turn.metadata.reply_to_participant_id == PHONE_NUMBER_ID  # it replied to the bot
    await events.drain()
    assert fake.sent[0].body["context"] == {"message_id": turn.metadata.message_id}


async def test_a_long_reply_is_split_under_4096_characters(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    events.reply = lambda message: "word " * 2000
    await fake.deliver(url_of(channel), fake.text_message(ANA, "tell me everything"))
    await events.drain()
    assert len(fake.sent) == 3 and all(len(s.text) <= 4096 for s in fake.sent)
    assert " ".join(s.text.strip() for s in fake.sent).split() == ["word"] * 2000


async def test_rate_limits_are_waited_out_and_the_reply_sent_once(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    fake.fail(code=131056, status=400)  # too many messages to this customer
    fake.fail(code=130429, status=429, retry_after=0)  # the number's throughput
    await fake.deliver(url_of(channel), fake.text_message(ANA, "quick question"))
    await events.drain()
    assert [s.text for s in fake.sent] == ["echo: quick question"]
    sends = [c for c in fake.calls if c.path.endswith("/messages")]
    assert len(sends) == 3 and events.reply_failures == []


async def test_the_message_answered_is_marked_read_with_the_typing_indicator(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    await fake.deliver(url_of(channel), fake.text_message(ANA, "hi", wamid="wamid.READ=="))
    turn = await events.next_inbound()
    reply = channel.open_reply(turn, agent_name="support")
    await reply.working()
    await fake.wait_until(lambda: fake.typing)
    assert await reply.finish("hello Ana") == [fake.sent[-1].wamid]
    assert fake.typing[0] == "wamid.READ==" and fake.reads[0] == "wamid.READ=="


async def test_a_message_for_another_number_is_left_alone(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents,
        store: SqlConversationStore) -> None:
    body = fake.text_message(ANA, "hi")
    body["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = "999"
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    assert await store.count() == 0


async def test_a_customer_known_only_by_a_business_scoped_id_is_answered_by_that_id(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents) -> None:
    bsuid = "US.13491208655302741918"
    body = fake.text_message(ANA, "no number shown")
    value = body["entry"][0]["changes"][0]["value"]
    value["contacts"] = [{"profile": {"name": "Ana"}, "user_id": bsuid}]
    message = value["messages"][0]
    del message["from"]
    message["from_user_id"] = bsuid
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    turn = await events.next_inbound()
    assert turn.participant.id == bsuid
    assert turn.conversation_id == f"whatsapp:{PHONE_NUMBER_ID}:{bsuid}"
    await events.drain()
    [sent] = fake.sent
    assert sent.body["recipient"] == bsuid and "to" not in sent.body
