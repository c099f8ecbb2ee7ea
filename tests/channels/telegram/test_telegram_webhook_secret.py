"""Webhook deliveries without the exact secret header are refused and never reach events."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, GROUP, FakeTelegram
from tests.ports import free_port
from threadline.channels.telegram import TelegramChannel
from threadline.errors import ConfigError

SECRET = "s3cret-token_for-tests"


@pytest.fixture
async def channel(fake: FakeTelegram, events: RecordingEvents) -> AsyncIterator[TelegramChannel]:
    port = free_port()
    channel = TelegramChannel(
        name="tg", **fake.channel_settings(), mode="webhook", webhook_port=port,
        webhook_path="/hooks/telegram", webhook_url=f"http://127.0.0.1:{port}/hooks/telegram",
        webhook_secret_token=SECRET,
    )
    await channel.start(events)
    yield channel
    await channel.stop()


@pytest.mark.parametrize("secret", [None, "wrong-secret", SECRET.upper()])
async def test_bad_or_missing_secret_is_refused_and_never_stored(
    fake: FakeTelegram, events: RecordingEvents, channel: TelegramChannel, secret: str | None
) -> None:
    assert fake.webhook is not None
    assert fake.webhook["url"].endswith("/hooks/telegram")

    forged = fake.message(GROUP, ALICE, "@support_bot forged")
    status = await fake.post_webhook(forged, secret=secret)
    # A genuine delivery after it: once it is handled, the forged one would have been too.
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot genuine"))
    genuine = await events.next_inbound()
    await fake.wait_for_calls("sendMessage", 1)

    assert status == 403
    assert genuine.content == "@support_bot genuine"
    assert [m.content for m in await events.store.get(genuine.conversation_id)] == [
        "@support_bot genuine"]
    assert [c.params["text"] for c in fake.calls_to("sendMessage")] == [
        "echo: @support_bot genuine"]


@pytest.mark.parametrize("secret", [None, "", "has spaces", "x" * 257])
def test_webhook_mode_requires_a_valid_secret_token(secret: str | None) -> None:
    with pytest.raises(ConfigError, match=r"'tg'.*webhook_secret_token"):
        TelegramChannel(name="tg", token="1:x", mode="webhook",
                        webhook_url="https://127.0.0.1/tg", webhook_secret_token=secret)


def test_webhook_mode_requires_the_public_url() -> None:
    with pytest.raises(ConfigError, match=r"'tg'.*webhook_url"):
        TelegramChannel(name="tg", token="1:x", mode="webhook", webhook_secret_token=SECRET)
