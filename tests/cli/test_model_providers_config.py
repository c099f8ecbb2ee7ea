"""Per-agent providers and models from the config: built once each, checked, errors named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run_process_async
from tests.fakes.openai import FakeOpenAI
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest
from threadline.agents.offline import OfflineModel
from threadline.agents.openai_provider import OpenAIProvider
from threadline.agents.summarizer import ExtractiveSummarizer, SummarizerAgent
from threadline.config import load_settings
from threadline.errors import ConfigError
from threadline.history.prompt import PromptMessage
from threadline.provider_setup import Providers


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_each_agent_gets_its_provider_and_model(tmp_path: Path) -> None:
    path = write(tmp_path, """\
model:
  provider: anthropic
  max_retries: 7
providers:
  local:
    type: openai
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
    max_retries: 5
agents:
  support: {model: claude-opus-4-1}
  notes: {provider: local}
  helper: {provider: local, model: qwen3}
  canned: {provider: offline}
""")
    settings = load_settings(path, env={"ANTHROPIC_API_KEY": "sk-ant"})
    providers = Providers(settings)

    support, support_model = providers.for_agent("support")
    notes, notes_model = providers.for_agent("notes")
    helper, helper_model = providers.for_agent("helper")
    canned, _ = providers.for_agent("canned")
    assert isinstance(support, AnthropicProvider) and support_model == "claude-opus-4-1"
    assert support._client.max_retries == 7  # the SDK's own backoff, as configured
    assert support._client.api_key == "sk-ant"
    assert isinstance(notes, OpenAIProvider) and notes_model == "llama3.1"
    assert notes.base_url == "http://127.0.0.1:11434/v1/" and notes.client.max_retries == 5
    assert helper is notes and helper_model == "qwen3"  # one client per configured provider
    assert isinstance(canned, OfflineModel)
    summarizer = providers.summarizer()
    assert isinstance(summarizer, SummarizerAgent)


def test_retries_default_to_four_not_the_sdk_default_of_two(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "model: {provider: anthropic}\n"),
                             env={"ANTHROPIC_API_KEY": "sk-ant"})
    provider, model = Providers(settings).for_agent("support")
    assert isinstance(provider, AnthropicProvider) and model == "claude-sonnet-5-5"
    assert provider._client.max_retries == 4


def test_an_openai_default_takes_its_key_from_its_own_variable(tmp_path: Path) -> None:
    path = write(tmp_path, """\
model: {provider: openai, summary_model: gpt-5-nano}
agents:
  support: {model: gpt-5-mini}
""")
    settings = load_settings(path, env={"OPENAI_API_KEY": "sk-oai", "ANTHROPIC_API_KEY": "x"})
    provider, model = Providers(settings).for_agent("support")
    assert isinstance(provider, OpenAIProvider) and model == "gpt-5-mini"
    assert provider.client.api_key == "sk-oai"
    request = ModelRequest(model=model, system="", messages=[PromptMessage("user", "hi")])
    assert "max_completion_tokens" in provider.render(request)  # what api.openai.com wants
    summarizer = Providers(settings).summarizer()
    assert isinstance(summarizer, SummarizerAgent)


def test_another_server_gets_no_key_from_openais_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "model: {provider: openai, base_url: 'http://127.0.0.1:1/v1'}\n"
                           "agents:\n  support: {model: llama3.1}\n")
    settings = load_settings(path, env={"OPENAI_API_KEY": "sk-openai-secret"})
    assert settings.model.api_key is None
    provider, _ = Providers(settings).for_agent("support")
    assert isinstance(provider, OpenAIProvider) and provider.client.api_key == "no-key"
    # and without a summary model it summarizes without a model
    assert isinstance(Providers(settings).summarizer(), ExtractiveSummarizer)


@pytest.mark.parametrize(("text", "expected"), [
    ("agents:\n  support: {provider: locl}\n",
     ":2: agents.support.provider: unknown provider 'locl': not under providers: (none) and "
     "not a provider type (anthropic, offline, openai)"),
    ("providers:\n  local: {type: openai, base_url: 'http://h/v1'}\n"
     "agents:\n  support: {provider: local}\n",
     ":4: agents.support.model: provider 'local' (openai) has no default model; set the model"),
    ("providers:\n  local:\n    type: openai\n    max_retries: -1\n",
     ":4: providers.local.max_retries: Input should be greater than or equal to 0, found -1"),
    ("providers:\n  local:\n    type: openai\n    api_key: sk-literal\n",
     ":4: providers.local.api_key: a literal secret is not allowed in the config file"),
    ("spend:\n  agent_daily_tokens:\n    suport: 1000\n",
     ":3: spend.agent_daily_tokens.suport: unknown agent 'suport' (agents: support)"),
    ("providers:\n  local: {type: gemini}\n",
     ":2: providers.local.type: unknown model provider 'gemini'; known providers: anthropic, "
     "offline, openai"),
])
def test_provider_mistakes_name_the_line_and_key(tmp_path: Path, text: str,
                                                 expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert f"{path}{expected}" in str(caught.value)


async def test_check_asks_the_openai_compatible_server_for_its_models(tmp_path: Path) -> None:
    async with FakeOpenAI(models=("llama3.1", "qwen3")) as fake:
        path = write(tmp_path, f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
providers:
  local:
    type: openai
    base_url: {fake.url}
ops:
  port: 0  # `check` tries the ops port: the default one may be a running bot's
agents:
  support: {{provider: local, model: llama3.1}}
""")
        outcome = await run_process_async("check", str(path), cwd=tmp_path)
        assert outcome.code == 0, outcome.err
        assert (f"ok    model provider local (openai): {fake.url}/ answered; 2 model(s) "
                "served") in outcome.out
        assert [r.path for r in fake.requests] == ["/v1/models"]
        assert fake.requests[0].headers["authorization"] == "Bearer no-key"


async def test_check_says_when_the_server_does_not_serve_the_model(tmp_path: Path) -> None:
    async with FakeOpenAI(models=("qwen3",)) as fake:
        path = write(tmp_path, f"""\
store:
  url: sqlite+aiosqlite:///{tmp_path / 'threadline.db'}
model:
  provider: openai
  base_url: {fake.url}
ops:
  port: 0
agents:
  support: {{model: llama3.1}}
""")
        outcome = await run_process_async("check", str(path), cwd=tmp_path)
    assert outcome.code == 1
    assert (f"FAIL  model: {fake.url}/ does not serve model 'llama3.1' (it serves qwen3)"
            in outcome.err)
