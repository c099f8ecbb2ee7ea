"""Status callbacks (sent, delivered, read, failed) and `check()`: a failure is kept in the
conversation with WhatsApp's reason, once however often Meta sends it; check says what is
missing and whether the Graph API answers."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from tests.channels.recording import RecordingEvents
from tests.channels.whatsapp.conftest import ANA, url_of
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel
from threadline.errors import ChannelAuthError, ChannelError, ConfigError


async def test_statuses_are_logged_and_a_failure_is_kept_once_with_its_reason(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents,
        store: SqlConversationStore) -> None:
    await fake.deliver(url_of(channel), fake.text_message(ANA, "hi"))
    turn = await events.next_inbound()
    await events.drain()
    [reply] = fake.sent
    with capture_logs() as logs:
        for status in ("sent", "delivered", "read"):
            assert await fake.deliver(url_of(channel), fake.status(reply, status)) == (200, "ok")
    assert [(e["status"], e["message_id"]) for e in logs if e["event"] == "whatsapp.status"] == [
        ("sent", reply.wamid), ("delivered", reply.wamid), ("read", reply.wamid)]
    failed = fake.status(reply, "failed", errors=[{
        "code": 131047, "title": "Re-engagement message",
        "error_data": {"details": "Message failed to send because more than 24 hours have "
                                  "passed since the customer last replied to this number."}}])
    assert await fake.deliver(url_of(channel), failed) == (200, "ok")
    assert await fake.deliver(url_of(channel), failed) == (200, "ok")  # delivered again
    notes = [t for t in await store.get(turn.conversation_id) if t.participant.kind == "system"]
    assert len(notes) == 1
    assert reply.wamid in notes[0].content and "131047 Re-engagement message" in notes[0].content


async def test_check_says_which_settings_are_missing(fake: FakeWhatsApp) -> None:
    with pytest.raises(ConfigError) as refused:
        WhatsAppChannel(name="wa", phone_number_id="", access_token="token", app_secret="",
                        verify_token="", graph_url=fake.url)
    said = str(refused.value)
    assert "phone_number_id" in said and "app_secret" in said and "verify_token" in said
    assert "access_token" not in said
    with pytest.raises(ConfigError, match="window_template_language 'english'"):
        WhatsAppChannel(name="wa", **fake.channel_settings(), window_template="follow_up",
                        window_template_language="english")


async def test_check_asks_the_graph_api_and_learns_the_number(
        fake: FakeWhatsApp, store: SqlConversationStore) -> None:
    channel = WhatsAppChannel(name="wa", **fake.channel_settings(), history=store)
    problems = await channel.check()
    assert channel.identity is not None and channel.identity.display_name == "Shop"
    assert "15550001111" in channel.identity.aliases
    assert problems == [p for p in problems if "window_template" in p]  # only that is unset
    templated = WhatsAppChannel(name="wa", **fake.channel_settings(), history=store,
                                window_template="follow_up")
    assert await templated.check() == []


async def test_check_says_when_the_token_is_refused_or_the_api_unreachable(
        fake: FakeWhatsApp) -> None:
    settings = {**fake.channel_settings(), "access_token": "expired"}
    with pytest.raises(ChannelAuthError, match="access token was refused"):
        await WhatsAppChannel(name="wa", **settings).check()
    settings = {**fake.channel_settings(), "graph_url": "http://127.0.0.1:9"}
    with pytest.raises(ChannelError, match="graph_url"):
        await WhatsAppChannel(name="wa", **settings).check()
