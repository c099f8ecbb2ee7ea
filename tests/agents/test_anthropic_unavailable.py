"""When the model is rate limited, overloaded, unreachable or slow: retry, then say so clearly."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from anthropic import AsyncAnthropic

from tests.fakes.anthropic import (
    FakeAnthropic,
    cut_off,
    error,
    fake_anthropic_fixture,
    stream_error,
    text,
)
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest
from threadline.errors import ConfigError, ModelError, ModelUnavailableError
from threadline.history.prompt import PromptMessage

fake = fake_anthropic_fixture()

REQUEST = ModelRequest(model="claude-test", system="You are Ada.",
                       messages=[PromptMessage("user", "hello")])


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_a_429_with_retry_after_is_retried_then_succeeds(
    fake: FakeAnthropic, stream: bool
) -> None:
    provider = AnthropicProvider(fake.client(max_retries=2), stream=stream)
    fake.script(error(429, "rate_limit_error", "Number of request tokens has exceeded your "
                      "per-minute rate limit", retry_after=0.01), text("hello back"))

    response = await provider.complete(REQUEST)

    assert response.text == "hello back"
    assert len(fake.requests) == 2
    assert fake.requests[0].raw == fake.requests[1].raw
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "1"]


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_529_until_retries_are_exhausted_raises_model_unavailable(
    fake: FakeAnthropic, stream: bool
) -> None:
    provider = AnthropicProvider(fake.client(max_retries=5), max_retries=2, stream=stream)
    fake.script(*[error(529, "overloaded_error", "Overloaded", retry_after=0.01)] * 3,
                text("never sent"))

    with pytest.raises(ModelUnavailableError) as caught:
        await provider.complete(REQUEST)

    assert len(fake.requests) == 3  # the provider's max_retries=2 wins over the client's 5
    message = str(caught.value)
    assert "'claude-test' is unavailable (529 overloaded_error: Overloaded) after 2 retries" in (
        message)
    assert "Try again later" in message


async def test_server_errors_exhaust_retries_as_unavailable(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client(max_retries=1))
    fake.script(*[error(500, "api_error", "Internal server error", retry_after=0.01)] * 2)

    with pytest.raises(ModelUnavailableError, match=r"500 api_error: Internal server error"):
        await provider.complete(REQUEST)
    assert len(fake.requests) == 2


async def test_overloaded_in_the_middle_of_a_stream_is_unavailable(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client())
    fake.script(stream_error("overloaded_error", "Overloaded"))

    with pytest.raises(ModelUnavailableError, match="overloaded_error: Overloaded"):
        await provider.complete(REQUEST)


async def test_a_connection_dropped_mid_stream_is_unavailable(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client(max_retries=2))
    fake.script(cut_off())

    with pytest.raises(ModelUnavailableError,
                       match="the connection broke during the reply of Anthropic model "
                             "'claude-test'"):
        await provider.complete(REQUEST)


async def test_a_connection_dropped_before_a_plain_reply_is_retried(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client(max_retries=2), stream=False)
    fake.script(cut_off(), text("second time lucky"))

    assert (await provider.complete(REQUEST)).text == "second time lucky"
    assert len(fake.requests) == 2


@pytest.mark.parametrize("stream", [True, False], ids=["streaming", "plain"])
async def test_a_slow_server_past_the_timeout_is_unavailable_without_hanging(
    fake: FakeAnthropic, stream: bool
) -> None:
    provider = AnthropicProvider(fake.client(max_retries=3), timeout=0.3, stream=stream)
    fake.script(text("too late", delay=30))

    with pytest.raises(ModelUnavailableError) as caught:
        await provider.complete(REQUEST)

    assert "gave no complete reply within 0.3 s (retries included)" in str(caught.value)
    assert "raise the provider's timeout" in str(caught.value)


async def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now, so every connection is refused.
    async with AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="test",
                              max_retries=0) as client:
        with pytest.raises(ModelUnavailableError, match=r"could not be reached .* after 0 retries"):
            await AnthropicProvider(client).complete(REQUEST)


async def test_a_rejected_key_is_a_model_error_that_says_what_to_set(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client(max_retries=3))
    fake.script(error(401, "authentication_error", "invalid x-api-key"))

    with pytest.raises(ModelError, match=r"rejected the credentials .*ANTHROPIC_API_KEY") as caught:
        await provider.complete(REQUEST)
    assert not isinstance(caught.value, ModelUnavailableError)
    assert len(fake.requests) == 1  # never retried


def clear_anthropic_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))


async def test_missing_credentials_say_which_variable_to_set(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clear_anthropic_environment(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    provider = AnthropicProvider()

    with pytest.raises(ModelError, match="no Anthropic credentials for model 'claude-test': "
                                         "set ANTHROPIC_API_KEY") as caught:
        await provider.complete(REQUEST)
    assert not isinstance(caught.value, ModelUnavailableError)
    assert fake.requests == []


def test_a_profile_that_cannot_be_loaded_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clear_anthropic_environment(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_PROFILE", "missing")

    with pytest.raises(ConfigError, match=r"credentials could not be loaded .*profile 'missing'.*"
                                          r"Set ANTHROPIC_API_KEY"):
        AnthropicProvider()


async def test_the_default_client_reads_the_key_and_base_url_from_the_environment(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clear_anthropic_environment(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)

    assert (await AnthropicProvider().complete(REQUEST)).text == "fake reply 1"
    headers = fake.requests[0].headers
    # This SDK version may send the key as x-api-key or as a bearer token; either carries it.
    assert "sk-from-env" in headers.get("x-api-key", "") + headers.get("authorization", "")


async def test_an_agent_answers_kindly_when_the_model_stays_overloaded(
    fake: FakeAnthropic, tmp_path: Path
) -> None:
    """529 until the retries run out, through the real SDK and the whole turn: a friendly
    reply reaches the user and both turns are stored."""
    from threadline.agents import Agent
    from threadline.backends.sql import SqlConversationStore
    from threadline.history import StoredMessage
    from threadline.history.model import Participant
    from threadline.interceptors import ErrorReplyInterceptor

    fake.script(*[error(529, "overloaded_error", "Overloaded", retry_after=0.01)] * 3)
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}") as store:
        agent = Agent(name="support", model="claude-test", conversation_history=store,
                      provider=AnthropicProvider(fake.client(), max_retries=2),
                      interceptors=[ErrorReplyInterceptor()])
        result = await agent.invoke(StoredMessage(
            conversation_id="c1", content="@support hello",
            participant=Participant(kind="user", id="U1", display_name="Ann")))
        assert len(fake.requests) == 3
        assert result.output.startswith("Sorry, I could not answer that just now")
        assert result.stop_reason == "error"
        stored = await store.get("c1")
        assert [m.participant.id for m in stored] == ["U1", "support"]
        assert stored[1].content == result.output
