"""Slack's assistant pane: a new assistant thread gets the configured suggested prompts, the
channel the person looks at is recorded in the thread's history, and the thread is the agent's
conversation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.slack import FakeSlack
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.platform import ChannelContext
from threadline.channels.slack import SlackChannel
from threadline.channels.slack.platform import PLATFORM
from threadline.team import Team

model = fake_anthropic_fixture()
PROMPTS = [{"title": "Order status", "message": "Where is my order?"},
           {"title": "Refunds", "message": "How do refunds work?"}]
THREAD_TS = "1700000000.000001"
THREAD = f"slack:T0FAKE:D0ALICE:{THREAD_TS}"


@asynccontextmanager
async def assistant(sqlite_url: str, model: FakeAnthropic, **options: Any
                    ) -> AsyncIterator[tuple[FakeSlack, SlackChannel, SqlConversationStore, Team]]:
    async with FakeSlack() as slack, SqlConversationStore(sqlite_url) as store:
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_channel("C0GENERAL", name="general")
        slack.add_channel("C0RANDOM", name="random")
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client()))])
        # Built from `channels:` settings, as `threadline run` builds it.
        settings = PLATFORM.settings(type="slack", **slack.channel_settings(), **options)
        channel = PLATFORM.build("slack", settings, ChannelContext())
        assert isinstance(channel, SlackChannel)
        team.attach(channel)
        await team.start()
        try:
            yield slack, channel, store, team
        finally:
            await team.stop()


async def test_a_new_assistant_thread_gets_the_prompts_and_its_context_is_kept(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    async with assistant(sqlite_url, model,
                         assistant_prompts=PROMPTS) as (slack, channel, store, _):
        started = await slack.deliver_event(channel.events_url, slack.assistant_thread_event())
        changed = await slack.deliver_event(channel.events_url, slack.assistant_thread_event(
            "assistant_thread_context_changed", context_channel="C0RANDOM"))
        stored = await store.get(THREAD)

    assert (started.status, changed.status) == (200, 200)
    [suggested] = slack.calls_to("assistant.threads.setSuggestedPrompts")
    assert suggested.params["channel_id"] == "D0ALICE"
    assert suggested.params["thread_ts"] == THREAD_TS
    prompts = suggested.params["prompts"]
    assert (json.loads(prompts) if isinstance(prompts, str) else prompts) == PROMPTS
    assert [(m.participant.kind, m.content) for m in stored] == [
        ("system", "The person in this assistant thread is now looking at #general (C0GENERAL)."),
        ("system", "The person in this assistant thread is now looking at #random (C0RANDOM).")]
    assert model.requests == []  # context is recorded, never answered


async def test_the_assistant_thread_is_the_agents_conversation(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    # Written at a pace, so it streams (a reply whole at once is posted whole).
    model.script(text("It is where the team talks about everything.", tokens_per_second=50))
    async with assistant(sqlite_url, model) as (slack, channel, store, team):
        await slack.deliver_event(channel.events_url, slack.assistant_thread_event())
        question = slack.message_event("what is this channel about?", channel="D0ALICE",
                                       channel_type="im", thread_ts=THREAD_TS)
        await slack.deliver_event(channel.events_url, question)
        [stop] = await slack.wait_for_calls("chat.stopStream", 1)  # streamed into the thread
        await team.stop()  # the reply is stored just after it is posted
        stored = await store.get(THREAD)

    [reply] = slack.calls_to("chat.startStream")
    assert slack.calls_to("assistant.threads.setSuggestedPrompts") == []  # none configured
    assert reply.params["channel"] == "D0ALICE" and reply.params["thread_ts"] == THREAD_TS
    assert stop.params["ts"] == stored[-1].metadata.message_id
    assert "#general (C0GENERAL)" in json.dumps(model.bodies[0])
    assert [m.participant.kind for m in stored] == ["system", "user", "agent"]
