"""A tool round trip through AnthropicProvider and the real SDK: tool_use, tool_result, answer."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, text, tool_use
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest, ModelUsage
from threadline.agents.tools import function_tool, to_tool_spec
from threadline.history.model import ToolCall, ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage

fake = fake_anthropic_fixture()


async def lookup_order(order_id: str) -> str:
    """Look up where an order is."""
    return f"order {order_id}: shipped on 2024-05-02"


LOOKUP = function_tool(lookup_order)


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_tool_use_then_tool_result_then_final_text(fake: FakeAnthropic, stream: bool) -> None:
    provider = AnthropicProvider(fake.client(), stream=stream)
    fake.script(
        tool_use("lookup_order", {"order_id": "A-1042"}, id="toolu_01", text="Let me check."),
        text("Your order A-1042 shipped on 2 May.", usage={"output_tokens": 12}),
    )
    question = PromptMessage("user", "Where is my order A-1042?")
    request = ModelRequest(model="claude-test", system="You are Ada, a support agent.",
                           messages=[question], tools=[to_tool_spec(LOOKUP)])

    first = await provider.complete(request)

    assert first.stop_reason == "tool_use"
    assert first.text == "Let me check."
    assert first.tool_calls == (ToolCall("toolu_01", "lookup_order", {"order_id": "A-1042"}),)
    assert first.model == "claude-test"

    call = first.tool_calls[0]
    result = await LOOKUP.run(dict(call.input))
    exchange = ToolExchange(call, ToolResult(call.id, result))
    second = await provider.complete(ModelRequest(
        model="claude-test", system=request.system, tools=request.tools,
        messages=[question, PromptMessage("assistant", first.text, tool_exchanges=(exchange,),
                                          in_round=True)],
    ))

    assert second.text == "Your order A-1042 shipped on 2 May."
    assert second.stop_reason == "end_turn" and second.tool_calls == ()
    assert second.usage.output_tokens == 12
    first_body, second_body = fake.bodies
    assert first_body.get("stream", False) is stream
    assert first_body["tools"][0]["name"] == "lookup_order"
    assert first_body["tools"][0]["input_schema"]["required"] == ["order_id"]
    assert first_body["system"][0]["text"] == "You are Ada, a support agent."
    assert [m["role"] for m in second_body["messages"]] == ["user", "assistant", "user"]
    assert second_body["messages"][1]["content"][:2] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01", "name": "lookup_order",
         "input": {"order_id": "A-1042"}, "cache_control": {"type": "ephemeral"}},
    ]
    tool_result = second_body["messages"][2]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_01"
    assert tool_result["content"] == "order A-1042: shipped on 2024-05-02"


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_usage_is_mapped_including_cache_tokens(fake: FakeAnthropic, stream: bool) -> None:
    provider = AnthropicProvider(fake.client(), stream=stream)
    fake.script(text("hi", usage={"input_tokens": 30, "output_tokens": 4,
                                  "cache_read_input_tokens": 1200,
                                  "cache_creation_input_tokens": 55}))
    response = await provider.complete(ModelRequest(
        model="claude-test", system="s", messages=[PromptMessage("user", "hello")]))
    assert response.usage == ModelUsage(input_tokens=30, output_tokens=4,
                                        cache_read_input_tokens=1200,
                                        cache_creation_input_tokens=55)


async def test_system_turns_of_the_prompt_join_the_system_prompt(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client())
    await provider.complete(ModelRequest(model="claude-test", system="You are Ada.", messages=[
        PromptMessage("system", "Summary so far: Ana ordered a mug."),
        PromptMessage("user", "hi"),
    ]))
    body = fake.bodies[0]
    assert [b["text"] for b in body["system"]] == ["You are Ada.",
                                                   "Summary so far: Ana ordered a mug."]
    assert body["messages"][0]["content"][0]["text"] == "hi"
