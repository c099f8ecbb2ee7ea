"""A tool call approved from Slack: Block Kit buttons under the request in the thread, who may
press them, and a denial answered in words."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.agents.approving import Refunds, approving_team
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.slack import FakeSlack
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.team import Team

model = fake_anthropic_fixture()


@asynccontextmanager
async def asked(sqlite_url: str, model: FakeAnthropic, refunds: Refunds
                ) -> AsyncIterator[tuple[FakeSlack, SlackChannel, Team, dict[str, Any]]]:
    """Alice asked for a refund in #general; yields the posted request (its API call params)."""
    async with FakeSlack() as slack, SqlConversationStore(sqlite_url) as store:
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_user("U0BOB", display_name="Bob")
        slack.add_channel("C0GENERAL", name="general")
        channel = SlackChannel(**slack.channel_settings(mode="http"))
        team = approving_team(store, AnthropicProvider(model.client(), stream=False), channel,
                              refunds)
        await team.start()
        try:
            await slack.deliver_event(channel.events_url, slack.message_event(
                "<@U0BOT> please refund order 7"))
            [request] = await slack.wait_for_calls("chat.postMessage", 1)
            yield slack, channel, team, dict(request.params)
        finally:
            await team.stop()


def blocks_of(params: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = params["blocks"]
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


async def test_approve_from_slack_runs_the_tool_once_and_answers_in_the_thread(
        sqlite_url: str, model: FakeAnthropic) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("Order 7 is refunded."))
    async with asked(sqlite_url, model, refunds) as (slack, channel, _team, request):
        blocks = blocks_of(request)
        assert "support wants to run refund" in request["text"]
        bob = slack.block_action(blocks, "Approve", user="U0BOB")
        alice = slack.block_action(blocks, "Approve", user="U0ALICE")
        assert (await slack.deliver_action(channel.events_url, bob))[0] == 200
        assert (await slack.deliver_action(channel.events_url, alice))[0] == 200
        answers = await slack.wait_for_responses(2)
        await slack.wait_for_calls("chat.postMessage", 2)

    assert refunds.made == ["7"]
    by_url = {url: str(body["text"]) for url, body in answers}
    assert by_url[bob["response_url"]].startswith("You may not decide on refund")
    assert by_url[alice["response_url"]] == "Approved: refund ran."
    reply = slack.calls_to("chat.postMessage")[1].params
    assert reply["text"] == "Order 7 is refunded."
    assert reply.get("thread_ts") == request.get("thread_ts")  # the request's own thread


async def test_deny_from_slack_is_answered_in_words_and_nothing_runs(
        sqlite_url: str, model: FakeAnthropic) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("I did not refund order 7."))
    async with asked(sqlite_url, model, refunds) as (slack, channel, _team, request):
        deny = slack.block_action(blocks_of(request), "Deny", user="U0ALICE")
        await slack.deliver_action(channel.events_url, deny)
        [(_, answer)] = await slack.wait_for_responses(1)
        await slack.wait_for_calls("chat.postMessage", 2)

    assert refunds.made == []
    assert answer["text"] == "Denied: refund was not run."
    assert slack.calls_to("chat.postMessage")[1].params["text"] == "I did not refund order 7."
