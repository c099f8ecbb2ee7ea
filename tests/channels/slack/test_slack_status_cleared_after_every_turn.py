"""Slack's assistant status says the agent is working, names a slow tool, and is always cleared.

Cleared after a reply, after a model error, and after a turn cut off by its timeout while a
tool was still running; where Slack refuses the status, the reply comes all the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tests.channels.live_rig import (
    UNAVAILABLE_APOLOGY,
    live_team,
    replies_in,
    sqlite_store_fixture,
)
from tests.fakes.anthropic import FakeAnthropic, error, fake_anthropic_fixture, text, tool_use
from tests.fakes.slack import ApiCall, FakeSlack, fake_slack_fixture
from threadline.agents.agent import UNFINISHED_REPLY
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel

anthropic = fake_anthropic_fixture()
store = sqlite_store_fixture()
slack = fake_slack_fixture()


def statuses(slack: FakeSlack, thread_ts: str) -> list[str]:
    return [c.params["status"] for c in slack.calls_to("assistant.threads.setStatus")
            if (c.params["channel_id"], c.params["thread_ts"]) == ("C0GENERAL", thread_ts)]


async def ask(slack: FakeSlack, channel: SlackChannel, anthropic: FakeAnthropic,
              store: SqlConversationStore, *, tools: Sequence[Any] = (),
              agent_timeout: float = 30.0) -> tuple[str, list[ApiCall]]:
    async with live_team(store, channel, anthropic, tools=tools, agent_timeout=agent_timeout):
        post = slack.message_event("where is my order?")
        await slack.deliver_event(channel.events_url, post)
        posted = await slack.wait_for_calls("chat.postMessage", 1)
    return post["ts"], posted


async def test_status_is_cleared_after_a_reply(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    anthropic.script(text("It shipped on Monday.", tokens_per_second=20))
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    thread, [posted] = await ask(slack, channel, anthropic, store)
    assert statuses(slack, thread) == ["is thinking...", ""]
    [thinking, cleared] = slack.calls_to("assistant.threads.setStatus")
    assert thinking.at < posted.at <= cleared.at
    assert slack.statuses[("C0GENERAL", thread)] == ""


async def test_status_is_cleared_after_a_model_error(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    anthropic.script(error(529, "overloaded_error", "Overloaded"))
    channel = SlackChannel(**slack.channel_settings())
    thread, [posted] = await ask(slack, channel, anthropic, store)
    assert posted.params["text"] == UNAVAILABLE_APOLOGY
    assert statuses(slack, thread) == ["is thinking...", ""]


async def test_a_slow_tool_is_named_and_the_status_cleared_after_the_timeout(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    async def lookup_order(order_id: str) -> str:
        """Where an order is (slowly)."""
        await asyncio.sleep(10)
        return "shipped"

    anthropic.script(tool_use("lookup_order", {"order_id": "4412"}))
    channel = SlackChannel(**slack.channel_settings())
    thread, [posted] = await ask(slack, channel, anthropic, store, tools=[lookup_order],
                                 agent_timeout=1.0)
    assert posted.params["text"] == UNFINISHED_REPLY["timeout"]
    assert statuses(slack, thread) == ["is thinking...", "is running lookup_order...", ""]
    [stored] = await replies_in(store, f"slack:T0FAKE:C0GENERAL:{thread}")
    assert stored.content == UNFINISHED_REPLY["timeout"]


async def test_where_slack_refuses_the_status_the_reply_still_comes(
        slack: FakeSlack, anthropic: FakeAnthropic, store: SqlConversationStore) -> None:
    anthropic.script(text("It shipped on Monday."), text("Still on its way."))
    slack.fail("assistant.threads.setStatus", error="not_allowed_token_type")
    channel = SlackChannel(**slack.channel_settings(), streaming=False)
    async with live_team(store, channel, anthropic):
        for number in (1, 2):
            post = slack.message_event(f"question {number}", thread_ts="1700000000.999999")
            await slack.deliver_event(channel.events_url, post)
            await slack.wait_for_calls("chat.postMessage", number)
    assert [c.params["text"] for c in slack.calls_to("chat.postMessage")] == [
        "It shipped on Monday.", "Still on its way."]
    assert len(slack.calls_to("assistant.threads.setStatus")) == 1, "asked once, then not again"
