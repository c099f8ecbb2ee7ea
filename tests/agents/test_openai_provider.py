"""The OpenAI-compatible provider through the real `openai` SDK against a fake server."""

from __future__ import annotations

import pytest

from tests.fakes.openai import FakeOpenAI, error, fake_openai_fixture, malformed, text, tool_call
from threadline.agents.llm import ModelRequest, ModelUsage
from threadline.agents.openai_provider import OpenAIProvider
from threadline.agents.tools import function_tool, to_tool_spec
from threadline.errors import ModelError, ModelUnavailableError
from threadline.history.model import ToolCall, ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage

fake = fake_openai_fixture()

REQUEST = ModelRequest(model="llama-test", system="You are Ada.",
                       messages=[PromptMessage("user", "hello")])


async def lookup_order(order_id: str) -> str:
    """Look up where an order is."""
    return f"order {order_id}: shipped on 2024-05-02"


LOOKUP = function_tool(lookup_order)


async def test_tool_call_then_tool_result_then_final_text(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(fake.client())
    fake.script(tool_call("lookup_order", {"order_id": "A-1042"}, id="call_01",
                          content="Let me check."),
                text("Your order A-1042 shipped on 2 May."))
    question = PromptMessage("user", "Where is my order A-1042?")
    request = ModelRequest(model="llama-test", system="You are Ada, a support agent.",
                           messages=[question], tools=[to_tool_spec(LOOKUP)], max_tokens=300)

    first = await provider.complete(request)

    assert first.stop_reason == "tool_use" and first.text == "Let me check."
    assert first.tool_calls == (ToolCall("call_01", "lookup_order", {"order_id": "A-1042"}),)
    call = first.tool_calls[0]
    exchange = ToolExchange(call, ToolResult(call.id, await LOOKUP.run(dict(call.input))))
    second = await provider.complete(ModelRequest(
        model="llama-test", system=request.system, tools=request.tools, max_tokens=300,
        messages=[question, PromptMessage("assistant", first.text, tool_exchanges=(exchange,),
                                          in_round=True)]))

    assert second.text == "Your order A-1042 shipped on 2 May."
    assert second.stop_reason == "end_turn" and second.tool_calls == ()
    first_body, second_body = fake.bodies
    assert first_body["max_tokens"] == 300  # not api.openai.com: the widely known field
    assert first_body["tools"] == [{"type": "function", "function": {
        "name": "lookup_order", "description": "Look up where an order is.",
        "parameters": first_body["tools"][0]["function"]["parameters"]}}]
    assert first_body["tools"][0]["function"]["parameters"]["required"] == ["order_id"]
    assert first_body["messages"][0] == {"role": "system",
                                         "content": "You are Ada, a support agent."}
    assert [m["role"] for m in second_body["messages"]] == ["system", "user", "assistant", "tool"]
    assert second_body["messages"][2]["tool_calls"][0]["function"] == {
        "name": "lookup_order", "arguments": '{"order_id": "A-1042"}'}
    assert second_body["messages"][3] == {"role": "tool", "tool_call_id": "call_01",
                                          "content": "order A-1042: shipped on 2024-05-02"}
    # the second request repeats the first one's leading messages: the server cached them
    assert second.usage.cache_read_input_tokens > 0


async def test_usage_maps_cached_prompt_tokens_apart_from_input(fake: FakeOpenAI) -> None:
    fake.script(text("hi", usage={"prompt_tokens": 1300, "completion_tokens": 4,
                                  "total_tokens": 1304,
                                  "prompt_tokens_details": {"cached_tokens": 1024}}))
    response = await OpenAIProvider(fake.client()).complete(REQUEST)
    assert response.usage == ModelUsage(input_tokens=276, output_tokens=4,
                                        cache_read_input_tokens=1024)
    assert response.model == "llama-test"


async def test_a_429_is_retried_with_the_sdk_backoff_then_succeeds(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(fake.client(), max_retries=2)
    fake.script(error(429, "requests", "Rate limit reached for requests", retry_after=0.01),
                text("hello back"))

    response = await provider.complete(REQUEST)

    assert response.text == "hello back"
    assert len(fake.requests) == 2
    assert fake.requests[0].raw == fake.requests[1].raw
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "1"]


async def test_500_until_the_retries_run_out_is_unavailable(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(fake.client(max_retries=5), max_retries=2)
    fake.script(*[error(500, "server_error", "The server had an error", retry_after=0.01)] * 3,
                text("never sent"))

    with pytest.raises(ModelUnavailableError) as caught:
        await provider.complete(REQUEST)

    assert len(fake.requests) == 3  # the provider's max_retries=2 wins over the client's 5
    message = str(caught.value)
    assert "model 'llama-test' at http://127.0.0.1:" in message
    assert "is unavailable (500 server_error: The server had an error) after 2 retries" in message


async def test_a_malformed_json_reply_is_a_model_error_that_says_so(fake: FakeOpenAI) -> None:
    fake.script(malformed())

    with pytest.raises(ModelError, match="returned a reply that Threadline cannot read") as caught:
        await OpenAIProvider(fake.client(max_retries=2)).complete(REQUEST)
    assert not isinstance(caught.value, ModelUnavailableError)
    assert len(fake.requests) == 1


async def test_tool_arguments_that_are_not_json_say_which_tool(fake: FakeOpenAI) -> None:
    fake.script(tool_call("lookup_order", '{"order_id": "A-1'))

    with pytest.raises(ModelError, match="'lookup_order' with arguments that are not JSON"):
        await OpenAIProvider(fake.client()).complete(REQUEST)


async def test_a_rejected_key_and_an_empty_quota_say_what_to_do(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider(fake.client(max_retries=1))
    quota = error(429, "insufficient_quota", "You exceeded your current quota",
                  code="insufficient_quota", retry_after=0.01)
    fake.script(error(401, "invalid_request_error", "Incorrect API key provided",
                      code="invalid_api_key"), quota, quota)

    with pytest.raises(ModelError, match=r"rejected the credentials .*OPENAI_API_KEY"):
        await provider.complete(REQUEST)
    assert len(fake.requests) == 1  # never retried
    # The SDK retries every 429; once it gives up, the quota is named, not "try later".
    with pytest.raises(ModelError, match=r"no quota left .*Add credit") as caught:
        await provider.complete(REQUEST)
    assert not isinstance(caught.value, ModelUnavailableError)


async def test_an_unreachable_server_is_unavailable_and_names_the_url() -> None:
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ModelUnavailableError, match=r"at http://127.0.0.1:9/v1/ could not be "
                                                    r"reached .* after 0 retries"):
        await provider.complete(REQUEST)


async def test_another_server_needs_no_key_and_never_gets_openais(
        fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    provider = OpenAIProvider(base_url=fake.url, max_retries=0)
    assert (await provider.complete(REQUEST)).text == "fake reply 1"
    assert fake.requests[0].headers["authorization"] == "Bearer no-key"
    await OpenAIProvider(base_url=fake.url, api_key="sk-local").complete(REQUEST)
    assert fake.requests[1].headers["authorization"] == "Bearer sk-local"
