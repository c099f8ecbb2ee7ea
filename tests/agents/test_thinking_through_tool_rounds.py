"""A Claude 5 agent that thinks completes its tool rounds; its thinking stays its own.

The fake Anthropic answers 400, as the API does, when a tool round's assistant turn comes back
without its thinking blocks or with them altered; the agent's turn succeeds only if the
provider sends them back exactly. The thinking is stored with the calls (every store), shown in
the inspector's record, and never reaches another agent's prompt, the agent's own later
prompts, or the platform.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from tests.fakes.anthropic import (
    FakeAnthropic,
    fake_anthropic_fixture,
    redacted_thinking,
    text,
    thinking_block,
    tool_use,
)
from tests.interceptors.scripted import ANN, RecordingChannel, say
from threadline.agents.agent import Agent, Answering
from threadline.agents.anthropic_provider import DEFAULT_MODEL, AnthropicProvider
from threadline.agents.llm import ModelRequest
from threadline.agents.summarizer import render_turns
from threadline.agents.tools import function_tool
from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.config import load_settings
from threadline.errors import ConfigError, ModelError
from threadline.history.model import (
    Participant,
    Reasoning,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.prompt import PromptMessage
from threadline.history.store import ConversationStore
from threadline.inspector.console.server import console_app
from threadline.inspector.recorder import ReplyRecorder
from threadline.inspector.redaction import Redactor
from threadline.runtime import Runtime
from threadline.team import Team

fake = fake_anthropic_fixture()

FIRST_THOUGHT = "Ann has two orders; look up the order first."
SECOND_THOUGHT = "Now the refund for the same order."
THIRD_THOUGHT = "The second order is still missing."


async def lookup_order(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id}: shipped on 2024-05-02"


async def lookup_refund(order_id: str) -> str:
    """Whether an order was refunded."""
    return f"order {order_id}: refund of 12.50 EUR sent"


def _all_text(body: dict[str, object]) -> str:
    return json.dumps(body, ensure_ascii=False)


async def test_a_thinking_agent_completes_two_tool_rounds_and_nobody_else_sees_the_thinking(
        fake: FakeAnthropic, tmp_path: Path) -> None:
    fake.script(
        tool_use("lookup_order", {"order_id": "A-1"}, id="toolu_1", thinking=FIRST_THOUGHT,
                 redacted=True, then=(("lookup_refund", {"order_id": "A-1"}, SECOND_THOUGHT),)),
        tool_use("lookup_order", {"order_id": "B-2"}, id="toolu_3", thinking=THIRD_THOUGHT),
        text("A-1 shipped and was refunded 12.50 EUR; B-2 shipped too."),
        text("Support answered your orders already."),
        text("Anything else about A-1?"),
    )
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        recorder = ReplyRecorder(records_for(store))
        thinker = Agent(name="support", model=DEFAULT_MODEL,
                        tools=[function_tool(lookup_order), function_tool(lookup_refund)],
                        conversation_history=store, provider=AnthropicProvider(fake.client()),
                        observer=recorder, answering=Answering(thinking=2048))
        other = Agent(name="billing", model=DEFAULT_MODEL, conversation_history=store,
                      provider=AnthropicProvider(fake.client()),
                      answering=Answering(thinking="off"))
        team = Team([thinker, other])
        channel = RecordingChannel()
        team.attach(channel)
        await team.start()
        try:
            await team.until_answered(say("@support where are my orders A-1 and B-2?", who=ANN),
                                      channel)
            await team.until_answered(say("@billing what did support find?", who=ANN), channel)
            await team.until_answered(say("@support thanks!", who=ANN), channel)
        finally:
            await team.stop()
            await recorder.close()
        stored = await store.get("local:room")
        [listed] = [r for r in await records_for(store).recent(agent="support")
                    if r.model_calls == 3]
        record = await records_for(store).get(listed.id)
        console = TestServer(console_app(records=records_for(store), store=store,
                                         redactor=Redactor(), prefix=""), host="127.0.0.1")
        async with console, ClientSession() as session, session.get(
                console.make_url(f"/records/{listed.id}")) as page:
            shown_in_console = await page.text()

    first, second, third, billing, later = fake.bodies
    sent_first = first["thinking"]
    assert sent_first == {"type": "enabled", "budget_tokens": 2048}
    assert first["max_tokens"] == 1024 + 2048  # the budget comes on top of the reply's limit
    # Round two sends the first reply's assistant turn back exactly: its thinking, the
    # redacted block, the first call, the interleaved thought, the second call.
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        thinking_block(FIRST_THOUGHT), redacted_thinking(),
        {"type": "tool_use", "id": "toolu_1", "name": "lookup_order",
         "input": {"order_id": "A-1"}},
        thinking_block(SECOND_THOUGHT),
        {"type": "tool_use", "id": "toolu_fake_lookup_refund", "name": "lookup_refund",
         "input": {"order_id": "A-1"}, "cache_control": {"type": "ephemeral"}},
    ]
    # Round three carries both rounds, each with its own thinking.
    assert third["messages"][3]["content"][0] == thinking_block(THIRD_THOUGHT)
    unmarked = [{k: v for k, v in b.items() if k != "cache_control"}
                for b in assistant["content"]]
    assert third["messages"][1]["content"] == unmarked

    # The platform got the answer alone; the other agent and the thinker's next turn got no
    # thinking at all.
    posted = [t for _, t, _ in channel.sent]
    assert posted == ["A-1 shipped and was refunded 12.50 EUR; B-2 shipped too.",
                      "Support answered your orders already.", "Anything else about A-1?"]
    for body in (billing, later):
        wire = _all_text(body)
        assert "refunded 12.50 EUR" in wire  # the answer is shared history ...
        for secret in (FIRST_THOUGHT, SECOND_THOUGHT, THIRD_THOUGHT, "signature",
                       "redacted_thinking"):
            assert secret not in wire  # ... the thinking is not
    assert billing["thinking"] == {"type": "disabled"}
    assert "thinking" not in later["messages"][-1]["content"][0]["type"]

    # Stored with the calls it preceded (for the inspector), and shown there.
    reply = next(m for m in stored if m.participant.id == "support" and m.tool_exchanges)
    calls = [e.call for e in reply.tool_exchanges]
    assert [[r.block for r in c.reasoning] for c in calls] == [
        [thinking_block(FIRST_THOUGHT), redacted_thinking()], [thinking_block(SECOND_THOUGHT)],
        [thinking_block(THIRD_THOUGHT)]]
    assert record is not None and record.detail is not None
    shown = [r["block"].get("thinking") for c in record.detail["model_calls"]
             for r in c["response"]["reasoning"]]
    assert FIRST_THOUGHT in shown and THIRD_THOUGHT in shown
    assert FIRST_THOUGHT not in record.reply
    assert FIRST_THOUGHT in shown_in_console and THIRD_THOUGHT in shown_in_console
    assert "[redacted by the provider]" in shown_in_console


def test_a_summary_never_reads_the_thinking() -> None:
    exchange = ToolExchange(
        ToolCall("toolu_1", "lookup_order", {"order_id": "A-1"},
                 (Reasoning("anthropic", thinking_block(FIRST_THOUGHT)),)),
        ToolResult("toolu_1", "shipped"))
    turn = StoredMessage(conversation_id="c1", content="It shipped.",
                         participant=Participant(kind="agent", id="support"),
                         tool_exchanges=(exchange,))
    rendered = render_turns([turn])
    assert "lookup_order" in rendered and FIRST_THOUGHT not in rendered


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_a_round_sent_back_without_or_with_altered_thinking_is_refused(
        fake: FakeAnthropic, stream: bool) -> None:
    provider = AnthropicProvider(fake.client(), stream=stream)
    fake.script(tool_use("lookup_order", {"order_id": "A-1"}, id="toolu_1",
                         thinking=FIRST_THOUGHT))
    question = PromptMessage("user", "where is A-1?")
    asked = await provider.complete(ModelRequest(model=DEFAULT_MODEL, system="",
                                                 messages=[question]))
    [call] = asked.tool_calls
    assert [r.block for r in call.reasoning] == [thinking_block(FIRST_THOUGHT)]
    result = ToolResult(call.id, "shipped")

    def round_with(reasoning: tuple[Reasoning, ...]) -> ModelRequest:
        exchange = ToolExchange(ToolCall(call.id, call.name, call.input, reasoning), result)
        return ModelRequest(model=DEFAULT_MODEL, system="", messages=[
            question, PromptMessage("assistant", "", (exchange,), in_round=True)])

    with pytest.raises(ModelError, match="must start with a thinking block"):
        await provider.complete(round_with(()))
    altered = Reasoning("anthropic", {**thinking_block(FIRST_THOUGHT),
                                      "thinking": FIRST_THOUGHT + " "})
    with pytest.raises(ModelError, match="Invalid `signature` in `thinking` block"):
        await provider.complete(round_with((altered,)))
    fake.script(text("A-1 shipped."))
    answered = await provider.complete(round_with(call.reasoning))
    assert answered.text == "A-1 shipped."


async def test_reasoning_round_trips_through_every_store(store: ConversationStore) -> None:
    reasoning = (Reasoning("anthropic", thinking_block(FIRST_THOUGHT)),
                 Reasoning("anthropic", redacted_thinking()),
                 Reasoning("openai", {"reasoning_content": "local model's thought"}))
    exchange = ToolExchange(ToolCall("toolu_1", "lookup_order", {"order_id": "A-1"}, reasoning),
                            ToolResult("toolu_1", "shipped"))
    reply = StoredMessage(conversation_id="c1", content="It shipped.",
                          participant=Participant(kind="agent", id="support"),
                          tool_exchanges=(exchange,))
    await store.append(reply)
    [back] = await store.get("c1")
    assert back.tool_exchanges[0].call.reasoning == reasoning


def test_the_thinking_setting_reaches_the_agent_and_a_small_budget_is_refused(
        tmp_path: Path) -> None:
    config = tmp_path / "threadline.yaml"
    config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 't.db'}
agents:
  support: {{thinking: 4096}}
  notes: {{thinking: "off"}}
  helper: {{}}
""", encoding="utf-8")
    runtime = Runtime.build(load_settings(config, env={}))
    assert {a.name: a.thinking for a in runtime.team.agents} == {
        "support": 4096, "notes": "off", "helper": "default"}
    config.write_text("agents:\n  support: {thinking: 500}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agents.support.thinking"):
        load_settings(config, env={})
