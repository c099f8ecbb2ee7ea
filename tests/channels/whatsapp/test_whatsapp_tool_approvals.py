"""A tool call approved from WhatsApp: interactive reply buttons under the request; a press
arrives as a message whose text is the button's command, from whoever pressed it, and the
tool runs once however often it is pressed (and whoever else presses it)."""

from __future__ import annotations

import json

from tests.agents.approving import Refunds, approving_team
from tests.channels.whatsapp.conftest import ANA, BO
from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from tests.fakes.whatsapp import FakeWhatsApp
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.backends.sql import SqlConversationStore
from threadline.channels.whatsapp import WhatsAppChannel

model = fake_anthropic_fixture()


async def test_approve_pressed_on_whatsapp_runs_the_tool_once(
        fake: FakeWhatsApp, model: FakeAnthropic, store: SqlConversationStore) -> None:
    refunds = Refunds()
    model.script(tool_use("refund", {"order": "7"}, id="toolu_r"), text("Order 7 is refunded."))
    channel = WhatsAppChannel(name="wa", **fake.channel_settings(), webhook_port=0,
                              history=store)
    team = approving_team(store, AnthropicProvider(model.client(), stream=False), channel,
                          refunds)
    await team.start()
    try:
        assert channel.webhook_url is not None
        await fake.deliver(channel.webhook_url, fake.text_message(ANA, "refund order 7"))
        [request] = await fake.wait_for_sent(1)
        action = request.body["interactive"]["action"]["buttons"]
        assert [b["reply"]["title"] for b in action] == ["Approve", "Deny"]
        assert 'support wants to run refund with {"order": "7"}' in request.text
        assert refunds.made == []
        # Bo is not the asker (forwarded the message, say): his press decides nothing.
        await fake.deliver(channel.webhook_url, fake.button_press(BO, request, 0))
        press = fake.button_press(ANA, request, 0)
        await fake.deliver(channel.webhook_url, press)
        await fake.deliver(channel.webhook_url, press)  # Meta delivering it again
        await fake.deliver(channel.webhook_url, fake.button_press(ANA, request, 0))  # again
        await fake.wait_for_sent(5)
    finally:
        await team.stop()
    assert refunds.made == ["7"]
    texts = [s.text for s in fake.sent[1:]]
    assert "Order 7 is refunded." in texts
    assert texts.count("Approved: refund ran.") == 2  # Ana's two presses, one redelivered
    assert any(t.startswith("You may not decide on refund") for t in texts)
    assert "order 7 refunded" in json.dumps(model.bodies[1]["messages"][-1]["content"][0])
