"""Slack replies are streamed as the model writes them, and stored once, whole.

A channel post is answered in a thread under it with Slack's chat streaming API; where Slack
refuses it, the reply is posted and updated. A model that fails mid-reply leaves the apology,
never the half reply, on Slack and in the history.
"""

from __future__ import annotations

import asyncio

from tests.channels.live_rig import (
    UNAVAILABLE_APOLOGY,
    live_team,
    replies_in,
    sqlite_store_fixture,
    words,
)
from tests.fakes.anthropic import (
    FakeAnthropic,
    fake_anthropic_fixture,
    stream_error,
    text,
    tool_use,
)
from tests.fakes.slack import ApiCall, FakeSlack, fake_slack_fixture
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.history.inbox import DeliveryState

anthropic = fake_anthropic_fixture()
store = sqlite_store_fixture()
slack = fake_slack_fixture()
INTERVAL = 0.2


def channel_on(slack: FakeSlack) -> SlackChannel:
    return SlackChannel(**slack.channel_settings(), stream_interval=INTERVAL)


async def streamed_answer(slack: FakeSlack, anthropic: FakeAnthropic,
                          store: SqlConversationStore) -> tuple[str, ApiCall]:
    """A channel post answered by the team; its ts and the call that stopped the stream."""
    channel = channel_on(slack)
    async with live_team(store, channel, anthropic):
        post = slack.message_event("where is my order?")
        await slack.deliver_event(channel.events_url, post)
        [stop] = await slack.wait_for_calls("chat.stopStream", 1)
    return post["ts"], stop


async def test_a_reply_streams_into_the_thread_and_is_stored_once_whole(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(60)
    anthropic.script(text(reply, tokens_per_second=50))
    thread, stop = await streamed_answer(slack, anthropic, store)
    [start] = slack.calls_to("chat.startStream")
    appends = slack.calls_to("chat.appendStream")
    assert start.params["thread_ts"] == thread
    assert start.params["recipient_user_id"] == "U0ALICE"
    assert start.at < anthropic.stream_ends[0], "the first text showed before the model finished"
    first = start.params["markdown_text"]
    assert reply.startswith(first) and first != reply
    assert len(appends) >= 2
    gaps = [b.at - a.at for a, b in zip([start, *appends], [*appends, stop], strict=True)]
    assert min(gaps) >= INTERVAL, gaps
    assert slack.messages[stop.params["ts"]] == reply
    assert not slack.calls_to("chat.postMessage")
    [stored] = await replies_in(store, f"slack:T0FAKE:C0GENERAL:{thread}")
    assert stored.content == reply
    assert stored.metadata.message_id == stop.params["ts"]
    ledger = await store.inbox.delivery(stored.id)
    assert ledger is not None, "claimed before the first text was shown"
    assert (ledger.state, ledger.reply.content, ledger.platform_ids) == (
        DeliveryState.DELIVERED, reply, (stop.params["ts"],))


async def test_where_slack_refuses_streaming_the_reply_is_posted_and_updated(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    reply = words(50)
    anthropic.script(text(reply, tokens_per_second=50))
    slack.fail("chat.startStream", error="feature_not_enabled")
    channel = channel_on(slack)
    async with live_team(store, channel, anthropic):
        post = slack.message_event("where is my order?")
        await slack.deliver_event(channel.events_url, post)
        [posted] = await slack.wait_for_calls("chat.postMessage", 1)
    assert posted.at < anthropic.stream_ends[0], "the first text showed before the model finished"
    assert reply.startswith(posted.params["text"]) and posted.params["text"] != reply
    updates = slack.calls_to("chat.update")
    assert updates and updates[-1].params["text"] == reply
    ts = updates[-1].params["ts"]
    assert slack.messages[ts] == reply
    assert len(slack.calls_to("chat.postMessage")) == 1
    gaps = [b.at - a.at for a, b in zip([posted, *updates], updates, strict=False)]
    assert min(gaps) >= INTERVAL, gaps
    [stored] = await replies_in(store, f"slack:T0FAKE:C0GENERAL:{post['ts']}")
    assert (stored.content, stored.metadata.message_id) == (reply, ts)


async def test_a_model_error_mid_stream_ends_the_reply_with_the_apology(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    half = words(30)
    anthropic.script(stream_error("overloaded_error", "Overloaded", after_text=half,
                                  tokens_per_second=50))
    thread, stop = await streamed_answer(slack, anthropic, store)
    [start] = slack.calls_to("chat.startStream")
    assert half.startswith(start.params["markdown_text"]), "part of the reply was shown"
    ts = stop.params["ts"]
    assert slack.messages[ts] == UNAVAILABLE_APOLOGY
    [stored] = await replies_in(store, f"slack:T0FAKE:C0GENERAL:{thread}")
    assert stored.content == UNAVAILABLE_APOLOGY
    assert stored.metadata.message_id == ts


async def test_a_reply_that_starts_over_after_a_tool_ends_as_the_final_text(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    async def lookup_order(order_id: str) -> str:
        """Where an order is."""
        await asyncio.sleep(0.3)
        return "shipped on Monday"

    final = "Your order 4412 shipped on Monday."
    anthropic.script(tool_use("lookup_order", {"order_id": "4412"}, text="Let me look."),
                     text(final, tokens_per_second=50))
    channel = channel_on(slack)
    async with live_team(store, channel, anthropic, tools=[lookup_order]):
        post = slack.message_event("where is order 4412?")
        await slack.deliver_event(channel.events_url, post)
        [stop] = await slack.wait_for_calls("chat.stopStream", 1)
    [start] = slack.calls_to("chat.startStream")
    assert start.params["markdown_text"] == "Let me look."
    assert not slack.calls_to("chat.appendStream"), "a stream cannot take text back"
    [update] = slack.calls_to("chat.update")
    assert stop.at <= update.at and update.params["text"] == final
    assert slack.messages[stop.params["ts"]] == final
    assert [c.params["status"] for c in slack.calls_to("assistant.threads.setStatus")] == [
        "is thinking...", "is running lookup_order...", "is thinking...", ""]
    [stored] = await replies_in(store, f"slack:T0FAKE:C0GENERAL:{post['ts']}")
    assert stored.content == final
