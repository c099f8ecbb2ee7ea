"""A tool call approved from Teams: an Adaptive Card with Approve and Deny (Action.Execute)
under the request in the thread, who may press them, and the tool run once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.agents.approving import Refunds, approving_team
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.teams import ALICE, APP_ID, BOB, Call, Chat, FakeTeams
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.teams import TeamsChannel

model = fake_anthropic_fixture()


@asynccontextmanager
async def asked(sqlite_url: str, model: FakeAnthropic, refunds: Refunds, teams: FakeTeams
                ) -> AsyncIterator[tuple[TeamsChannel, Chat, Call]]:
    """Alice asked for a refund in a channel thread; yields the posted request card."""
    async with SqlConversationStore(sqlite_url) as store:
        channel = TeamsChannel(name="teams", port=0, streaming=False, **teams.settings())
        team = approving_team(store, AnthropicProvider(model.client(), stream=False), channel,
                              refunds)
        await team.start()
        try:
            root = teams.next_id()
            thread = teams.channel(root)
            await teams.deliver(channel.messaging_url, teams.message(
                "<at>Threadline</at> please refund order 7", chat=thread,
                mentions={"Threadline": f"28:{APP_ID}"}, reply_to=root))
            [request] = await teams.wait_for_messages(1)
            yield channel, thread, request
        finally:
            await team.stop()


def card_text(call: Call) -> str:
    [attachment] = call.body["attachments"]
    return " ".join(block["text"] for block in attachment["content"]["body"])


async def test_approve_from_teams_runs_the_tool_once_and_answers_in_the_thread(
        sqlite_url: str, model: FakeAnthropic, teams: FakeTeams) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("Order 7 is refunded."))
    async with asked(sqlite_url, model, refunds, teams) as (channel, thread, request):
        assert "support wants to run refund" in card_text(request)
        bob = teams.press(request, "Approve", sender=BOB, chat=thread)
        alice = teams.press(request, "Approve", sender=ALICE, chat=thread)
        status, body = await teams.deliver(channel.messaging_url, bob)
        assert status == 200 and "Received" in body
        assert (await teams.deliver(channel.messaging_url, alice))[0] == 200
        # Alice presses again (or Teams resends the press): the tool still runs once.
        assert (await teams.deliver(channel.messaging_url, alice))[0] == 200
        messages = await teams.wait_for_messages(4)

    assert refunds.made == ["7"]
    texts = [m.body.get("text") for m in messages[1:]]
    assert any(t and t.startswith("You may not decide on refund") for t in texts)
    assert "Approved: refund ran." in texts
    assert "Order 7 is refunded." in texts
    assert {m.conversation_id for m in messages} == {thread.id}


async def test_deny_from_teams_is_answered_in_words_and_nothing_runs(
        sqlite_url: str, model: FakeAnthropic, teams: FakeTeams) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}), text("I did not refund order 7."))
    async with asked(sqlite_url, model, refunds, teams) as (channel, thread, request):
        deny = teams.press(request, "Deny", sender=ALICE, chat=thread)
        assert (await teams.deliver(channel.messaging_url, deny))[0] == 200
        messages = await teams.wait_for_messages(3)

    assert refunds.made == []
    texts = [m.body.get("text") for m in messages[1:]]
    assert "Denied: refund was not run." in texts
    assert "I did not refund order 7." in texts
