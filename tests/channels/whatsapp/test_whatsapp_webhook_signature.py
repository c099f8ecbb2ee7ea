"""Meta's webhook checks: the verify token answers the challenge, and only POSTs signed with
the app secret (`X-Hub-Signature-256`) reach the conversation; others are refused in words."""

from __future__ import annotations

from typing import Literal

import pytest

from tests.channels.recording import RecordingEvents
from tests.channels.whatsapp.conftest import ANA, url_of
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel


async def test_the_verify_token_answers_the_challenge(fake: FakeWhatsApp,
                                                      channel: WhatsAppChannel) -> None:
    status, text = await fake.verify(url_of(channel), verify_token=fake.verify_token,
                                     challenge="1158201444")
    assert (status, text) == (200, "1158201444")


async def test_a_wrong_verify_token_is_refused_in_words(fake: FakeWhatsApp,
                                                        channel: WhatsAppChannel) -> None:
    status, text = await fake.verify(url_of(channel), verify_token="guessed",
                                     challenge="1158201444")
    assert status == 403
    assert "1158201444" not in text and "verify_token" in text


@pytest.mark.parametrize("signed", ["no", "wrong"])
async def test_an_unsigned_or_forged_event_is_refused_and_never_answered(
        fake: FakeWhatsApp, channel: WhatsAppChannel, events: RecordingEvents,
        store: SqlConversationStore, signed: Literal["no", "wrong"]) -> None:
    body = fake.text_message(ANA, "refund me everything")
    status, text = await fake.deliver(url_of(channel), body, signed=signed)
    assert status == 401
    assert "X-Hub-Signature-256" in text and "nothing was read" in text
    # The same event, signed by Meta, is taken: the refusal kept nothing behind.
    assert await store.count() == 0
    assert fake.sent == []
    assert await fake.deliver(url_of(channel), body) == (200, "ok")
    await events.drain()
    assert [s.text for s in fake.sent] == ["echo: refund me everything"]


async def test_a_body_of_another_shape_is_a_400_saying_what(fake: FakeWhatsApp,
                                                channel: WhatsAppChannel) -> None:
    status, text = await fake.deliver(url_of(channel), {"entry": "not a list"})
    assert status == 400 and "entry is not a list" in text
