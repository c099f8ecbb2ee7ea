"""The OpenAI-compatible provider reads each server's stream shape through the real SDK.

OpenAI, vLLM, llama.cpp and Ollama differ in where the usage comes (a last chunk without
choices, running totals on every chunk, beside `timings`, on the finish chunk) and where the
finish reason sits; the reply, its tool calls (assembled from argument deltas), its reasoning
and its usage must come out the same from all four.
"""

from __future__ import annotations

import json

import pytest

from tests.fakes.openai import FakeOpenAI, Server, text, tool_call
from threadline.agents.llm import ModelRequest, ToolSpec
from threadline.agents.openai_provider import OpenAIProvider
from threadline.history.model import Reasoning, ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage

SERVERS: list[Server] = ["openai", "vllm", "llamacpp", "ollama"]
QUESTION = PromptMessage("user", "Where are my orders A-1 and B-2?")
LOOKUP = ToolSpec("lookup_order", "Where an order is.",
                  {"type": "object", "properties": {"order_id": {"type": "string"}}})
USAGE = {"prompt_tokens": 900, "completion_tokens": 31, "total_tokens": 931,
         "prompt_tokens_details": {"cached_tokens": 640}}


@pytest.mark.parametrize("server", SERVERS)
async def test_text_streams_and_the_usage_is_read_wherever_the_server_puts_it(
        server: Server) -> None:
    async with FakeOpenAI(server=server) as fake:
        fake.script(text("Both orders shipped on Monday.", usage=USAGE))
        provider = OpenAIProvider(fake.client())
        seen: list[str] = []

        async def on_text(so_far: str) -> None:
            seen.append(so_far)

        response = await provider.stream(ModelRequest(model="m", system="You help.",
                                                      messages=[QUESTION]), on_text=on_text)

    assert response.text == "Both orders shipped on Monday."
    assert seen[0] == "Both " and seen[-1] == response.text and len(seen) == 5
    assert response.stop_reason == "end_turn" and response.model == "m"
    assert (response.usage.input_tokens, response.usage.cache_read_input_tokens,
            response.usage.output_tokens) == (260, 640, 31)
    [body] = fake.bodies
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("server", SERVERS)
async def test_streamed_tool_calls_are_assembled_and_the_reasoning_goes_back_in_the_round(
        server: Server) -> None:
    thought = "Two orders: look both up." if server != "openai" else ""
    async with FakeOpenAI(server=server) as fake:
        fake.script(tool_call("lookup_order", {"order_id": "A-1"}, id="call_1",
                              reasoning=thought, more=(("lookup_order", {"order_id": "B-2"}),)),
                    text("A-1 and B-2 shipped."))
        provider = OpenAIProvider(fake.client())
        request = ModelRequest(model="m", system="", messages=[QUESTION], tools=[LOOKUP])
        asked = await provider.complete(request)
        assert asked.stop_reason == "tool_use"
        assert [(c.id, dict(c.input)) for c in asked.tool_calls] == [
            ("call_1", {"order_id": "A-1"}), ("call_fake_lookup_order", {"order_id": "B-2"})]
        expected = (Reasoning("openai", {"reasoning_content": thought}),) if thought else ()
        assert asked.tool_calls[0].reasoning == expected and asked.reasoning == expected
        exchanges = tuple(ToolExchange(c, ToolResult(c.id, "shipped")) for c in asked.tool_calls)
        answered = await provider.complete(ModelRequest(
            model="m", system="", tools=[LOOKUP], messages=[
                QUESTION, PromptMessage("assistant", asked.text, exchanges, in_round=True)]))

    assert answered.text == "A-1 and B-2 shipped."
    assistant = fake.bodies[1]["messages"][1]
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"order_id": "A-1"}, {"order_id": "B-2"}]
    assert assistant.get("reasoning_content", "") == thought


async def test_a_server_that_does_not_stream_is_read_whole() -> None:
    async with FakeOpenAI() as fake:
        fake.script(text("Shipped.", usage=USAGE))
        provider = OpenAIProvider(fake.client(), stream=False)
        seen: list[str] = []

        async def on_text(so_far: str) -> None:
            seen.append(so_far)

        response = await provider.stream(ModelRequest(model="m", system="",
                                                      messages=[QUESTION]), on_text=on_text)
    assert response.text == "Shipped." and seen == []
    assert "stream" not in fake.bodies[0] and "stream_options" not in fake.bodies[0]
