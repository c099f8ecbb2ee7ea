"""Start-up learns who the bot is and says plainly what would keep it silent or broken."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.telegram import ALICE, GROUP, TOKEN, FakeTelegram
from tests.ports import free_port
from threadline.channels.telegram import TelegramChannel
from threadline.errors import ChannelAuthError, ChannelError, ConfigError

CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot " \
           "instance is running"


async def test_identity_and_privacy_mode_warning(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        problems = await channel.check()
    finally:
        await channel.stop()
        await channel.stop()  # safe twice

    assert channel.identity is not None
    assert channel.identity.user_id == "4242"
    assert set(channel.identity.aliases) >= {"4242", "support_bot", "@support_bot"}
    [privacy] = problems
    assert "Privacy mode is on for @support_bot" in privacy
    assert "'tg'" in privacy and "/setprivacy" in privacy


async def test_no_problems_when_the_bot_reads_all_group_messages(
    events: RecordingEvents,
) -> None:
    async with FakeTelegram(can_read_all_group_messages=True) as fake:
        channel = TelegramChannel(name="tg", **fake.channel_settings())
        await channel.start(events)
        try:
            assert await channel.check() == []
        finally:
            await channel.stop()


async def test_bot_that_cannot_join_groups_is_reported(events: RecordingEvents) -> None:
    async with FakeTelegram(can_read_all_group_messages=True, can_join_groups=False) as fake:
        channel = TelegramChannel(name="tg", **fake.channel_settings())
        await channel.start(events)
        try:
            [problem] = await channel.check()
        finally:
            await channel.stop()

    assert "/setjoingroups" in problem


async def test_rejected_token_is_an_auth_error_that_does_not_echo_the_token(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    wrong = "999:not-the-token"
    channel = TelegramChannel(name="tg", token=wrong, base_url=fake.api_url)

    with pytest.raises(ChannelAuthError, match=r"'tg'.*token was rejected") as raised:
        await channel.start(events)

    assert wrong not in str(raised.value)
    assert channel.identity is None


async def test_unreachable_bot_api_is_a_channel_error_naming_the_channel(
    events: RecordingEvents,
) -> None:
    channel = TelegramChannel(name="tg", token=TOKEN,
                              base_url=f"http://127.0.0.1:{free_port()}/bot")

    with pytest.raises(ChannelError, match=r"'tg'.*connect to the Bot API"):
        await channel.start(events)


async def test_polling_refuses_to_take_over_a_registered_webhook(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    fake.webhook = {"url": "https://127.0.0.1:8443/other-deployment", "secret_token": None}
    channel = TelegramChannel(name="tg", **fake.channel_settings())

    with pytest.raises(ChannelError, match=r"'tg'.*webhook is set.*mode: webhook"):
        await channel.start(events)

    assert fake.calls_to("deleteWebhook") == []
    assert fake.webhook is not None


async def test_conflict_while_polling_is_reported_and_polling_goes_on(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    await channel.start(events)
    try:
        fake.fail("getUpdates", error_code=409, description=CONFLICT)
        # Release the waiting long poll so the next one meets the injected 409.
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot first"))
        await events.next_inbound()
        await fake.deliver(fake.message(GROUP, ALICE, "@support_bot after the conflict"))
        after = await events.next_inbound()  # PTB retried after its backoff
        problems = await channel.check()
    finally:
        await channel.stop()

    assert after.content == "@support_bot after the conflict"
    assert 409 in [c.status for c in fake.calls_to("getUpdates")]
    [conflict] = [p for p in problems if "409" in p]
    assert "'tg'" in conflict and "one deployment per token" in conflict


async def test_check_before_start_asks_once_and_start_twice_is_refused(
    fake: FakeTelegram, events: RecordingEvents
) -> None:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    [privacy] = await channel.check()  # before start, as `threadline check` calls it
    assert "Privacy mode is on for @support_bot" in privacy
    assert channel.identity is not None and channel.identity.user_id == "4242"
    assert [c.method for c in fake.calls] == ["getMe", "getWebhookInfo"]  # polling: no webhook
    await channel.start(events)
    try:
        with pytest.raises(ChannelError, match="already started"):
            await channel.start(events)
    finally:
        await channel.stop()


@pytest.mark.parametrize(
    ("settings", "named"),
    [({"token": ""}, "token"), ({"token": "1:x", "mode": "push"}, "mode")],
)
def test_bad_settings_name_the_setting(settings: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=f"'tg': {named}"):
        TelegramChannel(name="tg", **settings)  # type: ignore[arg-type]
