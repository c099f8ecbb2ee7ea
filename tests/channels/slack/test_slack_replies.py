"""Replies get through rate limits, are split under the limit, and fail clearly when they can't."""

from __future__ import annotations

import pytest

from tests.channels.recording import RecordingEvents
from tests.fakes.slack import slack_rig
from threadline.channels.slack import SlackChannel
from threadline.errors import ChannelError, ChannelPermanentError
from threadline.history.store import ConversationStore


def silent(store: ConversationStore) -> RecordingEvents:
    """Stores inbound turns without replying, so a test can call `send_reply` itself."""
    return RecordingEvents(store, reply=lambda _: None)


async def test_a_429_with_retry_after_is_waited_out_and_the_reply_delivered(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url) as (fake, channel, events):
        fake.fail("chat.postMessage", retry_after=0, times=2)
        await fake.deliver_event(channel.events_url, fake.message_event("busy day"))
        await events.next_inbound()
        attempts = await fake.wait_for_calls("chat.postMessage", 3)
        await channel.stop()

        assert [a.params["text"] for a in attempts] == ["echo: busy day"] * 3
        assert len(events.sent) == 1 and len(events.sent[0]) == 1


async def test_a_rate_limit_that_outlasts_the_retries_is_a_temporary_error(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=silent,
                         rate_limit_retries=1) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("hello"))
        inbound = await events.next_inbound()
        fake.fail("chat.postMessage", retry_after=0, times=2)

        with pytest.raises(ChannelError, match="ratelimited") as raised:
            await channel.send_reply(inbound, "later")
        assert not isinstance(raised.value, ChannelPermanentError)
        assert len(fake.calls_to("chat.postMessage")) == 2


@pytest.mark.parametrize("code", ["channel_not_found", "not_in_channel", "is_archived",
                                  "msg_too_long", "invalid_auth", "account_inactive"])
async def test_permanent_errors_raise_channel_permanent_error_naming_the_conversation(
    sqlite_url: str, code: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=silent) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("hello"))
        inbound = await events.next_inbound()
        fake.fail("chat.postMessage", error=code)

        with pytest.raises(ChannelPermanentError) as raised:
            await channel.send_reply(inbound, "a reply")
        assert code in str(raised.value)
        assert "slack:T0FAKE:C0GENERAL" in str(raised.value)
        assert len(fake.calls_to("chat.postMessage")) == 1


async def test_a_long_reply_is_split_under_the_limit_and_reassembles(sqlite_url: str) -> None:
    paragraph = "The deploy finished and every check passed. " * 40
    text = "\n\n".join(f"{i}. {paragraph}" for i in range(12))
    async with slack_rig(sqlite_url, events_factory=silent) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("report"))
        inbound = await events.next_inbound()
        ids = await channel.send_reply(inbound, text)

    posts = fake.calls_to("chat.postMessage")
    parts = [p.params["text"] for p in posts]
    assert len(parts) > 1 and len(ids) == len(parts)
    assert all(len(p) <= SlackChannel.max_message_chars for p in parts)
    assert " ".join(parts).split() == text.split()
    assert {p.params["thread_ts"] for p in posts} == {inbound.metadata.message_id}


async def test_reply_text_is_escaped_but_deliberate_mentions_stay_markup(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url, events_factory=silent) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("compare"))
        inbound = await events.next_inbound()
        await channel.send_reply(inbound, "<@U0ALICE>: a < b && c > d, see <http://127.0.0.1/x>")

    [post] = fake.calls_to("chat.postMessage")
    assert post.params["text"] == (
        "<@U0ALICE>: a &lt; b &amp;&amp; c &gt; d, see <http://127.0.0.1/x>")


async def test_the_agent_name_is_the_username_only_when_asked(sqlite_url: str) -> None:
    async with slack_rig(sqlite_url, events_factory=silent,
                         agent_name_as_username=True) as (fake, channel, events):
        await fake.deliver_event(channel.events_url, fake.message_event("who?"))
        inbound = await events.next_inbound()
        await channel.send_reply(inbound, "me", agent_name="Planner")
        await channel.send_reply(inbound, "and me")

    named, plain = fake.calls_to("chat.postMessage")
    assert named.params["username"] == "Planner"
    assert "username" not in plain.params
