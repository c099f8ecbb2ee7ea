"""Replies that cannot be read and requests the API rejects become clear `ModelError`s."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import BadRequestError

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture, malformed
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest
from threadline.errors import ModelError, ModelUnavailableError
from threadline.history.prompt import PromptMessage

fake = fake_anthropic_fixture()

REQUEST = ModelRequest(model="claude-test", system="You are Ada.",
                       messages=[PromptMessage("user", "hello")])


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
@pytest.mark.parametrize("body", [
    '{"id": "msg_broken", "type": "message", "content": [',
    '{"id": "msg_odd", "type": "message", "role": "assistant", "model": "claude-test", '
    '"content": "not a list", "stop_reason": "end_turn", "usage": {}}',
], ids=["bad-json", "unexpected-shape"])
async def test_an_unreadable_reply_is_a_model_error(
    fake: FakeAnthropic, stream: bool, body: str
) -> None:
    provider = AnthropicProvider(fake.client(max_retries=2), stream=stream)
    fake.script(malformed(body))

    with pytest.raises(ModelError, match="that Threadline cannot read") as caught:
        await provider.complete(REQUEST)

    assert not isinstance(caught.value, ModelUnavailableError)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_a_request_the_api_rejects_is_a_model_error_naming_the_reason(
    fake: FakeAnthropic, stream: bool
) -> None:
    provider = AnthropicProvider(fake.client(max_retries=2), stream=stream)
    opening_with_the_agent = ModelRequest(model="claude-test", system="s", messages=[
        PromptMessage("assistant", "I spoke first"), PromptMessage("user", "hello")])

    with pytest.raises(ModelError) as caught:
        await provider.complete(opening_with_the_agent)

    message = str(caught.value)
    assert "rejected the request for model 'claude-test'" in message
    assert '400 invalid_request_error: messages: first message must use the "user" role' in (
        message)
    assert "retrying will not help" in message
    assert len(fake.requests) == 1


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
MARK = {"cache_control": {"type": "ephemeral"}}


@pytest.mark.parametrize(("messages", "system", "reason"), [
    ([{"role": "user", "content": [TOOL_RESULT]}], None,
     "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [TOOL_USE]},
      {"role": "user", "content": "never mind"}], None,
     "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    ([{"role": "user", "content": [{"type": "text", "text": ""}]}], None,
     "text content blocks must be non-empty"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi", **MARK}]}],
     [{"type": "text", "text": f"part {i}", **MARK} for i in range(4)],
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
], ids=["orphan-result", "unanswered-use", "empty-text", "five-breakpoints"])
async def test_the_fake_rejects_what_the_real_api_rejects(
    fake: FakeAnthropic, messages: list[dict[str, Any]], system: list[dict[str, Any]] | None,
    reason: str,
) -> None:
    provider_request = {"model": "claude-test", "max_tokens": 10, "messages": messages,
                        **({"system": system} if system else {})}
    with pytest.raises(BadRequestError) as caught:
        await fake.client().messages.create(**provider_request)
    assert caught.value.type == "invalid_request_error"
    assert reason in str(caught.value.api_message)
