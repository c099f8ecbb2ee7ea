"""Slack slash commands: signed, recorded before the ack, answered through the response_url by
the pipeline (never by the model), over HTTP and Socket Mode."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text
from tests.fakes.slack import FakeSlack, slack_rig
from threadline.agents import Agent
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.slack import SlackChannel
from threadline.team import Team

model = fake_anthropic_fixture()
DM = "D0ALICE"


@dataclass
class App:
    slack: FakeSlack
    channel: SlackChannel
    store: SqlConversationStore
    team: Team

    async def command(self, name: str, text: str = "", *, channel: str = "C0GENERAL"
                      ) -> dict[str, object]:
        """Send a slash command the way the channel's mode receives it; the answer's body."""
        before = len(self.slack.responses)
        payload = self.slack.slash_command(name, text, channel=channel)
        if self.channel.mode == "http":
            status, body = await self.slack.deliver_command(self.channel.events_url, payload)
            assert (status, body) == (200, "")
        else:
            ack = await self.slack.send_socket_command(payload)
            assert not ack.get("payload")
        responses = await self.slack.wait_for_responses(before + 1)
        url, answer = responses[before]
        assert url == payload["response_url"]
        return answer


@asynccontextmanager
async def running(sqlite_url: str, model: FakeAnthropic, *, mode: str = "http"
                  ) -> AsyncIterator[App]:
    async with FakeSlack() as slack, SqlConversationStore(sqlite_url) as store:
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_channel("C0GENERAL", name="general")
        team = Team([Agent(name="support", conversation_history=store,
                           provider=AnthropicProvider(model.client()))])
        channel = SlackChannel(**slack.channel_settings(mode=mode))
        team.attach(channel)
        await team.start()
        try:
            yield App(slack, channel, store, team)
        finally:
            await team.stop()


async def test_each_command_answers_through_the_response_url_without_the_model(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    async with running(sqlite_url, model) as app:
        agents = await app.command("/agents")
        summary = await app.command("/summary")
        forget = await app.command("/forget")
        await app.team.stop()
        stored = await app.store.get("slack:T0FAKE:C0GENERAL")

    assert agents["response_type"] == "ephemeral"
    assert str(agents["text"]).startswith("Agents here:") and "@threadline" in str(agents["text"])
    assert str(summary["text"]).startswith("support has no summary of this conversation yet")
    assert str(forget["text"]).startswith("Nothing to forget")
    assert model.requests == []
    assert app.slack.calls_to("chat.postMessage") == []
    assert [(m.participant.id, m.content.split()[0], m.is_command) for m in stored] == [
        ("U0ALICE", "/agents", True), ("support", "Agents", True),
        ("U0ALICE", "/summary", True), ("support", "support", True),
        ("U0ALICE", "/forget", True), ("support", "Nothing", True)]


async def test_an_unsigned_slash_command_is_refused_and_not_recorded(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    async with running(sqlite_url, model) as app:
        payload = app.slack.slash_command("/forget", "confirm")
        status, _ = await app.slack.deliver_command(app.channel.events_url, payload,
                                                    signing_secret="not-the-secret")
        await app.team.stop()
        stored = await app.store.count()

    assert status == 401
    assert app.slack.responses == []
    assert stored == 0


async def test_forget_in_a_dm_over_socket_mode_is_confirmed_then_honoured(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    async with running(sqlite_url, model, mode="socket") as app:
        await app.slack.send_socket_event(app.slack.message_event(
            "my order 7781 never arrived", channel=DM, channel_type="im"))
        await app.slack.wait_for_calls("chat.postMessage", 1)
        question = await app.command("/forget", channel=DM)
        done = await app.command("/forget", "confirm", channel=DM)
        await app.slack.send_socket_event(app.slack.message_event(
            "what was my order number?", channel=DM, channel_type="im"))
        await app.slack.wait_for_calls("chat.postMessage", 2)

    assert "/forget confirm" in str(question["text"])
    assert str(done["text"]).startswith("Done: support forgot")
    first, last = (json.dumps(body["messages"]) for body in model.bodies)
    assert "7781" in first and "7781" not in last and "/forget" not in last


async def test_a_command_that_could_not_be_recorded_is_acked_asking_to_send_it_again(
    sqlite_url: str,
) -> None:
    async with slack_rig(sqlite_url) as (slack, channel, events):
        events.refuse = lambda message: True
        status, body = await slack.deliver_command(channel.events_url,
                                                   slack.slash_command("/forget", "confirm"))

    assert status == 200
    assert "could not be recorded" in body  # Slack shows a plain-text ack to the sender
    assert slack.responses == [] and events.inbound.empty()


async def test_forget_is_confirmed_with_the_button_under_the_question(
    sqlite_url: str, model: FakeAnthropic,
) -> None:
    # Written at a pace, so it streams (a reply whole at once is posted whole).
    model.script(text("Sorry about that, I am looking into it now.", tokens_per_second=50))
    async with running(sqlite_url, model) as app:
        post = app.slack.message_event("<@U0BOT> my order 7781 never arrived")
        await app.slack.deliver_event(app.channel.events_url, post)
        await app.slack.wait_for_calls("chat.stopStream", 1)  # answered, streamed in a thread
        question = await app.command("/forget")
        press = app.slack.block_action(question["blocks"], "Forget")  # type: ignore[arg-type]
        status, _ = await app.slack.deliver_action(app.channel.events_url, press)
        url, done = (await app.slack.wait_for_responses(2))[1]
        await app.team.stop()
        stored = await app.store.get("slack:T0FAKE:C0GENERAL")

    assert status == 200 and url == press["response_url"]
    assert str(done["text"]).startswith("Done: support forgot")
    assert [(m.content.split()[0], m.is_command) for m in stored][-4:] == [
        ("/forget", True), ("This", True), ("/forget", True), ("Done:", True)]
