"""The OpenAI SDK traces nothing itself: a 429 it retried shows on our `chat` span as one
`http.attempt` event per attempt, with the status each got, and the reply's id and tokens are
the convention's attributes. In process, exporting to the receiver on loopback; a summary the
agent writes while its prompt is assembled is its own `chat` span, marked as such."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.openai import FakeOpenAI, error, text
from tests.fakes.otlp import FakeOtlp
from tests.interceptors.scripted import say
from threadline.agents.agent import Agent, Memory
from threadline.agents.openai_provider import OpenAIProvider
from threadline.agents.summarizer import SummarizerAgent
from threadline.backends.sql import SqlConversationStore
from threadline.history.assembler import AssemblerOptions
from threadline.inspector.redaction import redactor_for
from threadline.tracing import TracingOptions, start_tracing


async def test_a_retried_429_is_an_event_per_attempt(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp, FakeOpenAI(models=("llama3.1",)) as fake, \
            SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        fake.script(error(429, "requests", "Rate limited", retry_after=0),
                    text("Order A-1042 shipped on Monday."))
        provider = OpenAIProvider(base_url=fake.url, max_retries=1, stream=False)
        agent = Agent(name="support", model="llama3.1", provider=provider,
                      conversation_history=store)
        tracing = start_tracing(TracingOptions(enabled=True, endpoint=otlp.url),
                                redactor=redactor_for(), set_global=False)
        assert tracing is not None
        try:
            result = await agent.invoke(say("@support where is A-1042?"))
        finally:
            await agent.close()
            await asyncio.to_thread(tracing.stop)

    assert result.output == "Order A-1042 shipped on Monday."
    [chat] = otlp.named("chat llama3.1")
    [invoked] = otlp.named("invoke_agent support")
    assert chat.parent_span_id == invoked.span_id
    assert [(name, attributes["http.response.status_code"]) for name, attributes in chat.events
            ] == [("http.attempt", 429), ("http.attempt", 200)]
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.response.id"].startswith("chatcmpl")
    assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    assert chat.attributes["threadline.model.purpose"] == "reply"
    assert chat.status_code != 2


async def test_a_summary_written_for_the_prompt_is_its_own_model_span(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp, FakeOpenAI(models=("llama3.1",)) as fake, \
            SqlConversationStore(f"sqlite:///{tmp_path / 't.db'}") as store:
        provider = OpenAIProvider(base_url=fake.url, max_retries=0, stream=False)
        agent = Agent(name="support", model="llama3.1", provider=provider,
                      conversation_history=store,
                      memory=Memory(options=AssemblerOptions(rolling_summary_threshold=4),
                                    summarizer=SummarizerAgent(provider, model="llama3.1")))
        for number in range(6):
            await store.append(say(f"@support note {number}: the parcel is blue"))
        tracing = start_tracing(TracingOptions(enabled=True, endpoint=otlp.url),
                                redactor=redactor_for(), set_global=False)
        assert tracing is not None
        try:
            await agent.invoke(say("@support what colour is the parcel?"))
        finally:
            await agent.close()
            await asyncio.to_thread(tracing.stop)

    [invoked] = otlp.named("invoke_agent support")
    purposes = sorted(c.attributes["threadline.model.purpose"] for c in otlp.named("chat "))
    assert purposes == ["reply", "summary"]
    assert {c.parent_span_id for c in otlp.named("chat ")} == {invoked.span_id}
    assert invoked.attributes["threadline.prompt.summary_created"] is True
