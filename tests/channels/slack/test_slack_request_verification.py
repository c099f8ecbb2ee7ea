"""Only requests signed with the signing secret, recent and readable reach the events (HTTP).

Whatever the sender got wrong, the answer is a 401 or a 400 and no traceback in the logs.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from tests.fakes.slack import slack_rig
from threadline.channels.slack import SlackChannel
from threadline.errors import ConfigError


async def test_a_bad_signature_gets_401_and_never_reaches_events(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        forged = await fake.deliver_event(channel.events_url, fake.message_event("forged"),
                                          signing_secret="not-the-secret")
        await fake.deliver_event(channel.events_url, fake.message_event("barrier"))

        assert forged.status == 401
        assert (await events.next_inbound()).content == "barrier"
        await channel.stop()
        assert events.inbound.empty()
        assert await events.store.count() == 1


async def test_a_replayed_request_older_than_five_minutes_gets_401(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        stale = await fake.deliver_event(channel.events_url, fake.message_event("replayed"),
                                         timestamp=int(time.time()) - 6 * 60)
        unsigned_status, _ = await fake.post_signed(
            channel.events_url, json.dumps(fake.event_callback(fake.message_event("x"))),
            headers={"X-Slack-Signature": ""})
        await channel.stop()

        assert stale.status == 401
        assert unsigned_status == 401
        assert await events.store.count() == 0
        assert not fake.calls_to("chat.postMessage")


async def test_the_url_verification_challenge_is_answered(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, _):
        answer = await fake.verify_url(channel.events_url, "3eZbrw1aBm2rZgRNFdxV2595E9CY")
        forged = await fake.post_signed(
            channel.events_url, json.dumps({"type": "url_verification", "challenge": "c"}),
            signing_secret="wrong")

    assert answer.status == 200
    assert json.loads(answer.body) == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY"}
    assert forged[0] == 401


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(("body", "headers", "signed", "status"), [
    ('{"type": "event_callback", "event": {', {}, True, 400),
    ('{"type": "event_callback", "event": {', {}, False, 401),
    ("[1, 2, 3]", {}, True, 400),
    ("payload=%7Bnot-json", FORM, True, 400),
    ('{"type": "event_callback"}', {"X-Slack-Request-Timestamp": "soon"}, True, 401),
    ('{"type": "event_callback"}', {"X-Slack-Request-Timestamp": "1e9"}, True, 401),
], ids=["bad-json-signed", "bad-json-unsigned", "json-array", "bad-form-payload",
        "word-timestamp", "float-timestamp"])
async def test_malformed_requests_get_400_or_401_and_no_traceback(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
    body: str, headers: dict[str, str], signed: bool, status: int,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with slack_rig(sqlite_url) as (fake, channel, events):
        if not signed:
            headers = {**headers, "X-Slack-Signature": ""}
        answered, text = await fake.post_signed(channel.events_url, body, headers=headers)
        barrier = await fake.deliver_event(channel.events_url, fake.message_event("barrier"))
        assert (await events.next_inbound()).content == "barrier"
        assert await events.store.count() == 1
        await events.drain()

    logged = capsys.readouterr()
    assert (answered, barrier.status) == (status, 200)
    assert "Slack request" in text
    assert "Traceback" not in logged.out + logged.err
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_body_that_is_not_utf8_gets_401_without_a_traceback(
    sqlite_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, _):
        assert fake._session is not None
        async with fake._session.post(
                channel.events_url, data=b'{"type": "\xff\xfe"}',
                headers={"X-Slack-Request-Timestamp": str(int(time.time())),
                         "X-Slack-Signature": "v0=" + "0" * 64}) as response:
            status = response.status

    assert status == 401
    assert "Traceback" not in capsys.readouterr().out


@pytest.mark.parametrize(("settings", "named"), [
    ({"bot_token": "xoxb-1", "mode": "http"}, "signing_secret"),
    ({"bot_token": "xoxb-1", "mode": "socket"}, "app_token"),
    ({"bot_token": "", "signing_secret": "s"}, "bot_token"),
    ({"bot_token": "xoxb-1", "signing_secret": "s", "mode": "webhook"}, "mode"),
    ({"bot_token": "xoxb-1", "signing_secret": "s", "path": "slack"}, "path"),
])
def test_missing_or_wrong_settings_are_refused_by_name(
    settings: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named) as raised:
        SlackChannel(name="ops", **settings)  # type: ignore[arg-type]
    assert "'ops'" in str(raised.value)
