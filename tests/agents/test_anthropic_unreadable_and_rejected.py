"""Replies that cannot be read and requests the API rejects become clear `ModelError`s."""

from __future__ import annotations

import pytest

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
