"""An agent's `model:` list: when the first model stays overloaded past its retries, the next
answers the same turn, once.

Through `threadline run` on the local channel: the fake Anthropic answers 529 to the first
model however often it is retried; the second answers. The person gets the second model's
answer (no apology), the reply record names the model that answered and why the first did
not, and the spend counts the answering model's tokens at its own price. A rejected request
(a 400) is not passed on: another model would get the same prompt.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, error, text
from tests.fakes.openai import FakeOpenAI
from tests.interceptors.scripted import ANN, say
from tests.launch import spawn
from threadline.agents.agent import Agent, Answering
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelChoice
from threadline.backends.parts import records_for
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.spend import SqlSpendLedger
from threadline.config import load_settings
from threadline.errors import ModelError
from threadline.provider_setup import checks
from threadline.spend.budget import SpendDay

PRIMARY, FALLBACK = "claude-sonnet-5-5", "claude-haiku-5-5"


def overloaded_primary(body: dict[str, Any]) -> Reply:
    if body["model"] == PRIMARY:
        return error(529, "overloaded_error", "Overloaded", retry_after=0)
    return text("Your order A-1042 shipped on Monday.")


async def test_the_fallback_answers_the_turn_once_when_the_first_model_stays_overloaded(
        tmp_path: Path) -> None:
    db = tmp_path / "threadline.db"
    async with FakeAnthropic() as fake:
        fake.responder = overloaded_primary
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {fake.url}
  max_retries: 1
spend:
  prices:
    anthropic/{PRIMARY}: {{input: 3, output: 15}}
    anthropic/{FALLBACK}: {{input: 1, output: 5}}
ops:
  enabled: false
channels:
  local:
    type: local
    stdin: true
agents:
  support:
    model: [{PRIMARY}, {FALLBACK}]
    channels: [local]
""", encoding="utf-8")
        process = await spawn("run", str(config), cwd=tmp_path, stdin=asyncio.subprocess.PIPE,
            env={**os.environ, "ANTHROPIC_API_KEY": "test-key"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(60):
            out, err = await process.communicate(b"@support where is my order A-1042?\n")
        assert process.returncode == 0, err.decode()

    # The first model was asked and retried once; the fallback answered once.
    assert [b["model"] for b in fake.bodies] == [PRIMARY, PRIMARY, FALLBACK]
    replies = [line for line in out.decode().splitlines() if line.startswith("support> ")]
    assert replies == ["support> Your order A-1042 shipped on Monday."]
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        records = records_for(store)
        [listed] = await records.recent(agent="support")
        record = await records.get(listed.id)
        [spent] = await SqlSpendLedger(store).totals(day=SpendDay().today()[0], scope="agent")
    assert record is not None and record.detail is not None
    assert record.model == FALLBACK and record.error is None
    assert record.stop_reason == "end_turn"
    [passed] = record.detail["passed_over"]
    assert passed["model"] == PRIMARY
    assert "overloaded" in passed["reason"] and "529" in passed["reason"]
    assert [(c["model"], c["passed_over"]) for c in record.detail["model_calls"]] == [
        (PRIMARY, True), (FALLBACK, False)]
    # Spend: the fallback's tokens, at the fallback's price.
    assert spent.spent.input_tokens + spent.spent.cache_write_tokens == (
        record.input_tokens + record.cache_write_tokens) > 0
    expected = (record.input_tokens * 1 + record.output_tokens * 5) / 1_000_000
    assert abs(spent.spent.cost - expected) < 1e-12


async def test_a_rejected_request_is_not_passed_to_the_fallback(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake, SqlConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 't.db'}") as store:
        fake.script(error(400, "invalid_request_error", "prompt is too long"))
        provider = AnthropicProvider(fake.client())
        agent = Agent(name="support", model=PRIMARY, provider=provider,
                      conversation_history=store,
                      answering=Answering(fallbacks=[ModelChoice(provider, FALLBACK)]))
        try:
            await agent.invoke(say("@support hello", who=ANN))
        except ModelError as exc:
            assert "prompt is too long" in str(exc)
        else:
            raise AssertionError("a 400 must not be answered by the fallback")
        finally:
            await agent.close()
    assert [b["model"] for b in fake.bodies] == [PRIMARY]


async def test_check_checks_every_model_of_the_list(tmp_path: Path) -> None:
    async with FakeOpenAI(models=("qwen3",)) as server:
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
providers:
  local:
    type: openai
    base_url: {server.url}
agents:
  support:
    provider: local
    model: [qwen3, {{model: llama3.1}}]
""", encoding="utf-8")
        found = checks(load_settings(config, env={}))
        # No agent answers with the `model:` section's provider, so it is not checked.
        assert sorted(found) == ["model provider local (openai)",
                                 "model provider local (openai), fallback llama3.1"]
        assert "1 model(s) served" in await found["model provider local (openai)"]()
        try:
            await found["model provider local (openai), fallback llama3.1"]()
        except Exception as exc:
            assert "does not serve model 'llama3.1'" in str(exc)
        else:
            raise AssertionError("a fallback the server does not serve must fail the check")


async def test_check_asks_anthropic_for_every_model_of_the_list(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {fake.url}
agents:
  support:
    model: [{PRIMARY}, claude-sonnet-9]
""", encoding="utf-8")
        found = checks(load_settings(config, env={"ANTHROPIC_API_KEY": "test-key"}))
        assert sorted(found) == ["model", "model, fallback claude-sonnet-9"]
        assert await found["model"]() == f"Anthropic API key accepted; model {PRIMARY} served"
        try:
            await found["model, fallback claude-sonnet-9"]()
        except Exception as exc:
            assert "does not serve model 'claude-sonnet-9'" in str(exc)
        else:
            raise AssertionError("a fallback the API does not serve must fail the check")
        assert [r.path for r in fake.requests] == [
            f"/v1/models/{PRIMARY}", "/v1/models/claude-sonnet-9"]
