"""A tool call approved from Telegram: the inline keyboard under the request, who may press it,
and what the thread hears for an approval, a denial and a timeout."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.agents.approving import Refunds, approving_team
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.telegram import ALICE, BOB, GROUP, FakeTelegram
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.telegram import TelegramChannel

model = fake_anthropic_fixture()


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as opened:
        yield opened


async def ask_for_refund(fake: FakeTelegram, model: FakeAnthropic, store: SqlConversationStore,
                         refunds: Refunds, *, approval_timeout: float = 600.0) -> object:
    channel = TelegramChannel(name="tg", **fake.channel_settings())
    team = approving_team(store, AnthropicProvider(model.client(), stream=False), channel,
                          refunds, timeout=approval_timeout)
    await team.start()
    await fake.deliver(fake.message(GROUP, ALICE, "@support_bot please refund order 7"))
    await fake.wait_for_calls("sendMessage", 1)
    return team


async def test_approve_runs_the_tool_once_and_answers_in_the_thread(
        fake: FakeTelegram, model: FakeAnthropic, store: SqlConversationStore) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}, id="toolu_r"), text("Order 7 is refunded."))
    team = await ask_for_refund(fake, model, store, refunds)
    request = fake.sent[0]
    buttons = [b for row in request["reply_markup"]["inline_keyboard"] for b in row]
    assert [b["text"] for b in buttons] == ["Approve", "Deny"]
    assert "support wants to run refund with {\"order\": \"7\"}" in request["text"]
    assert refunds.made == []

    await fake.deliver(fake.press(request, "Approve", user=BOB))  # not Bob's to decide
    await fake.deliver(fake.press(request, "Approve", user=ALICE))
    await fake.deliver(fake.press(request, "Approve", user=ALICE))  # a second press
    await fake.wait_for_calls("sendMessage", 5)
    await team.stop()

    assert refunds.made == ["7"]
    answers = [str(m["text"]) for m in fake.sent[1:]]
    assert answers[0] == "Order 7 is refunded."
    assert answers[1].startswith("You may not decide on refund: only telegram:1001 may.")
    assert answers[2:] == ["Approved: refund ran.", "Approved: refund ran."]
    assert all(m["chat"]["id"] == GROUP.id for m in fake.sent)
    assert "order 7 refunded" in json.dumps(model.bodies[1]["messages"][-1]["content"][0])
    stored = await store.get(f"telegram:{GROUP.id}")
    reply = next(m for m in stored if m.content == "Order 7 is refunded.")
    assert [e.result.content for e in reply.tool_exchanges] == ["order 7 refunded"]


async def test_deny_is_answered_in_words_and_nothing_runs(
        fake: FakeTelegram, model: FakeAnthropic, store: SqlConversationStore) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}, id="toolu_r"),
                 text("I did not refund order 7: it was declined."))
    team = await ask_for_refund(fake, model, store, refunds)

    await fake.deliver(fake.press(fake.sent[0], "Deny", user=ALICE))
    await fake.wait_for_calls("sendMessage", 3)
    await team.stop()

    assert refunds.made == []
    assert [str(m["text"]) for m in fake.sent[1:]] == [
        "I did not refund order 7: it was declined.", "Denied: refund was not run."]
    told = json.dumps(model.bodies[1]["messages"][-1]["content"][0])
    assert "denied this call to refund" in told and '"is_error": true' in told


async def test_nobody_deciding_in_time_is_answered_in_words(
        fake: FakeTelegram, model: FakeAnthropic, store: SqlConversationStore) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}, id="toolu_r"),
                 text("Nobody approved the refund in time, so I did not make it."))
    team = await ask_for_refund(fake, model, store, refunds, approval_timeout=0.5)

    await fake.wait_for_calls("sendMessage", 2)
    await fake.deliver(fake.press(fake.sent[0], "Approve", user=ALICE))  # too late
    await fake.wait_for_calls("sendMessage", 3)
    await team.stop()

    assert refunds.made == []
    assert str(fake.sent[1]["text"]).startswith("Nobody approved the refund in time")
    assert str(fake.sent[2]["text"]) == "Too late: nobody decided in time, so refund was not run."
    assert "nobody approved this call to refund in time" in json.dumps(
        model.bodies[1]["messages"][-1]["content"][0])
