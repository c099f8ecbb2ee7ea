"""A tool call approved from Matrix by a reaction: the numbered keys on the request (the bot
reacted with each), who may choose, and the tool run once however often the key is pressed."""

from __future__ import annotations

from tests.agents.approving import Refunds, approving_team
from tests.channels.matrix.rig import matrix_channel
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.matrix import ALICE, BOB, FakeMatrix
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.matrix.outbound import CHOICE_KEYS

model = fake_anthropic_fixture()


async def test_a_reaction_approves_and_the_tool_runs_once(
        model: FakeAnthropic, sqlite_url: str) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}, id="toolu_r"), text("Order 7 is refunded."))
    async with FakeMatrix() as fake, SqlConversationStore(sqlite_url) as store:
        room = fake.add_room("Shop", members=[ALICE, BOB])
        root = fake.message(room, ALICE, "refunds")
        team = approving_team(store, AnthropicProvider(model.client(), stream=False),
                              matrix_channel(fake, store), refunds)
        await team.start()
        try:
            fake.message(room, ALICE, "@support please refund order 7", thread=root["event_id"])
            [request] = await fake.wait_for_sent(1)
            await fake.wait_until(lambda: len(fake.sent) >= 3)
            keys = [s.content["m.relates_to"]["key"] for s in fake.sent if s.type == "m.reaction"]
            assert keys == list(CHOICE_KEYS[:2])
            assert "React with 1\ufe0f\u20e3 Approve, 2\ufe0f\u20e3 Deny" in request.content["body"]
            assert request.content["m.relates_to"]["event_id"] == root["event_id"]
            assert refunds.made == []

            fake.react(room, request.event_id, BOB, CHOICE_KEYS[0])  # not Bob's to decide
            fake.react(room, request.event_id, ALICE, "\U0001f44d")  # not a choice
            fake.react(room, request.event_id, ALICE, CHOICE_KEYS[0])
            fake.react(room, request.event_id, ALICE, CHOICE_KEYS[0])  # pressed again
            sent = await fake.wait_for_sent(5)
            await fake.wait_for_sync_past(fake.position)
        finally:
            await team.stop()
    assert refunds.made == ["7"]
    answers = [str(s.content["body"]) for s in sent[1:]]
    assert answers[0] == "Order 7 is refunded."
    assert answers[1].startswith(f"You may not decide on refund: only matrix:{ALICE} may.")
    assert answers[2:] == ["Approved: refund ran.", "Approved: refund ran."]
    assert all(s.content["m.relates_to"]["event_id"] == root["event_id"] for s in sent)
    assert len(fake.messages_sent()) == 5
