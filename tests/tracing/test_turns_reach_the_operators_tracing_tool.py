"""A turn through `threadline run` (fake Telegram, fake Anthropic) arrives at an OTLP receiver
on loopback as one trace an operator's tool can read: the turn, the agent, each model call with
its `gen_ai.*` attributes, the tool call, the delivery; message content only when opted in.

The model is overloaded once (a 529 the SDK retries), then asks for the search tool, then
answers. The reply record keeps the trace's id. Configured by the YAML in one scenario and by
the `OTEL_*` variables alone in another; `threadline demo` exports too.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.cli.helpers import run_process_async
from tests.fakes.anthropic import FakeAnthropic, Reply, error, text, tool_use
from tests.fakes.otlp import FakeOtlp, ReceivedSpan
from tests.fakes.telegram import FakeTelegram, TgUser, private_chat
from tests.inspector.helpers import threadline_run
from threadline.backends.sql.records import SqlReplyRecords
from threadline.backends.sql.store import SqlConversationStore
from threadline.inspector.record import ReplyRecord

PERSON = TgUser(2002, "Ravi", username="ravi")
PRIMARY, FALLBACK = "claude-sonnet-5-5", "claude-haiku-5-5"
SECRET_WORDS = "my locker code is OTTER-5512"
QUESTION = "which locker code did I give you?"


def config(tmp_path: Path, anthropic: FakeAnthropic, telegram: FakeTelegram,
           tracing: str, *, agent: str = "") -> Path:
    path = tmp_path / "threadline.yaml"
    path.write_text(f"""\
store:
  url: sqlite:///{tmp_path / 'threadline.db'}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
  max_retries: 1
log:
  format: json
ops:
  port: 0
{tracing}
channels:
  telegram:
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
    base_file_url: {telegram.file_url}
agents:
  support:
    system_prompt: You keep track of lockers.
    channels: [telegram]
{agent}""", encoding="utf-8")
    return path


async def two_turns(tmp_path: Path, tracing: str, env: dict[str, str], otlp: FakeOtlp
                    ) -> tuple[list[ReceivedSpan], ReplyRecord, str]:
    """Two private messages through `threadline run`; the spans of the second turn's trace,
    the newest reply record and its pages on the console."""
    async with FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        anthropic.script(text("Noted."),
                         error(529, "overloaded_error", "Overloaded", retry_after=0.05),
                         tool_use("conversation_search", {"query": "locker code"}),
                         text("You gave me OTTER-5512."))
        path = config(tmp_path, anthropic, telegram, tracing)
        env = {"ANTHROPIC_API_KEY": "test-key", "TELEGRAM_BOT_TOKEN": telegram.token, **env}
        logged: dict[str, dict[str, object]] = {}
        async with threadline_run(path, env, logged=logged):
            for number, words in enumerate((SECRET_WORDS, QUESTION), start=1):
                await telegram.deliver(telegram.message(private_chat(PERSON), PERSON, words))
                await telegram.wait_for_calls("sendMessage", number)
            page = await record_page(str(logged["console.listening"]["url"]))
        # Stopped by SIGTERM: a clean stop sends every span, so nothing is waited for here.
    async with SqlConversationStore(f"sqlite:///{tmp_path / 'threadline.db'}") as store:
        [newest, _] = await SqlReplyRecords(store).recent(f"telegram:{PERSON.id}")
    assert newest.trace_id is not None and len(newest.trace_id) == 32
    assert newest.trace_id in page
    # The turn's log line names its trace too, to be found beside it.
    assert logged["turn.done"]["trace_id"] == newest.trace_id
    return [s for s in otlp.spans if s.trace_id == newest.trace_id], newest, page


async def record_page(console: str) -> str:
    """The console's conversation page and that of the newest reply record, once both
    replies are recorded."""
    base = console.rstrip("/")
    conversation = f"telegram:{PERSON.id}"
    async with aiohttp.ClientSession() as session, asyncio.timeout(30):
        while True:  # records are written in the background, just after the reply
            async with session.get(f"{base}/api/conversation",
                                   params={"id": conversation}) as response:
                records = (await response.json())["records"]
            if len(records) == 2:
                break
            await asyncio.sleep(0.05)
        async with session.get(f"{base}/conversation", params={"id": conversation}) as listed:
            assert listed.status == 200
            listing = await listed.text()
        async with session.get(f"{base}/records/{records[0]['id']}") as response:
            assert response.status == 200
            # Both pages, so a test can look for the links on either.
            return listing + await response.text()


def only(spans: list[ReceivedSpan], prefix: str) -> ReceivedSpan:
    found = [s for s in spans if s.name.startswith(prefix)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


async def test_a_turn_is_one_trace_with_the_genai_spans_and_no_content(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp:
        trace, newest, page = await two_turns(tmp_path, f"""\
tracing:
  enabled: true
  endpoint: {otlp.url}
  service_name: lockers-bot
  trace_url: https://tempo.example/trace/{{trace_id}}""", {}, otlp)
        turns = otlp.named("threadline.turn")

    # Each turn is its own trace; the second one holds every step, parented as it ran.
    assert len(turns) == 2 and len({t.trace_id for t in turns}) == 2
    turn = only(trace, "threadline.turn")
    agent = only(trace, "invoke_agent support")
    tool = only(trace, "execute_tool conversation_search")
    deliver = only(trace, "threadline.deliver")
    chats = [s for s in trace if s.name.startswith("chat ")]
    assert turn.parent_span_id == "" and turn.resource["service.name"] == "lockers-bot"
    assert agent.parent_span_id == turn.span_id
    assert {tool.parent_span_id, deliver.parent_span_id} == {agent.span_id}
    assert [c.parent_span_id for c in chats] == [agent.span_id] * 2

    conversation = f"telegram:{PERSON.id}"
    assert turn.attributes["gen_ai.conversation.id"] == conversation
    assert turn.attributes["threadline.platform"] == "telegram"
    assert turn.attributes["threadline.outcome"] == "answered"
    assert turn.attributes["threadline.agents"] == ["support"]
    [(event, routed)] = turn.events
    assert event == "threadline.routed" and routed == {
        "gen_ai.agent.name": ["support"], "threadline.addressed_because": ["dm"]}

    # Why the prompt is what it is: the assembler's account, on the agent's span.
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["threadline.addressed_because"] == "dm"
    assert agent.attributes["threadline.prompt.turns_included"] >= 2
    assert agent.attributes["threadline.prompt.summary_used"] is False
    assert agent.attributes["threadline.stop_reason"] == "end_turn"
    assert agent.attributes["threadline.tool_calls"] == ["conversation_search"]

    # The model calls, by the GenAI conventions.
    first, second = chats
    for chat in chats:
        assert chat.kind == 3  # CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "anthropic"
        assert chat.attributes["gen_ai.request.model"] == chat.attributes[
            "gen_ai.response.model"]
        assert chat.attributes["gen_ai.response.id"].startswith("msg_")
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in chat.attributes
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert agent.attributes["gen_ai.usage.output_tokens"] == sum(
        c.attributes["gen_ai.usage.output_tokens"] for c in chats)

    # The 529 the SDK retried shows under the first call, in the SDK's own span.
    [sdk_call] = [s for s in trace if s.parent_span_id == first.span_id]
    assert sdk_call.attributes["http.request.resend_count"] == 1

    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("toolu_")
    assert deliver.attributes["threadline.delivered_ids"]

    # No message content anywhere without the opt-in.
    for span in otlp.spans:
        assert span.content_attributes == {}, span.name
        flat = json.dumps(span.attributes)
        assert "OTTER-5512" not in flat and "locker code" not in flat, span.name
    assert newest.trace_id == turn.trace_id
    assert f'href="https://tempo.example/trace/{turn.trace_id}"' in page
    assert page.count('class="trace-link"') == 2  # each reply of the listing links its trace
    shown = await run_process_async("inspect", "show", "--url",
                                    f"sqlite:///{tmp_path / 'threadline.db'}", "--json",
                                    newest.id, cwd=tmp_path)
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["trace_id"] == turn.trace_id


async def test_the_otel_variables_alone_turn_tracing_and_content_on(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp:
        trace, _, page = await two_turns(tmp_path, "", {
            "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url,
            "OTEL_SERVICE_NAME": "from-the-env",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, otlp)
    turn = only(trace, "threadline.turn")
    assert turn.resource["service.name"] == "from-the-env"
    assert "set tracing.trace_url to link it" in page and "tempo" not in page
    first, second = [s for s in trace if s.name.startswith("chat ")]
    said = json.loads(first.attributes["gen_ai.input.messages"])
    assert said[-1]["role"] == "user" and QUESTION in said[-1]["parts"][0]["content"]
    assert json.loads(first.attributes["gen_ai.system_instructions"])[0]["content"].startswith(
        "You keep track of lockers.")
    [output] = json.loads(second.attributes["gen_ai.output.messages"])
    assert output["parts"] == [{"type": "text", "content": "You gave me OTTER-5512."}]
    tool = only(trace, "execute_tool conversation_search")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"query": "locker code"}
    assert "gen_ai.tool.call.result" in tool.attributes


async def test_the_demo_exports_its_turns(tmp_path: Path) -> None:
    (tmp_path / "lines.txt").write_text("@support my order is 4417-B\n", encoding="utf-8")
    async with FakeOtlp() as otlp:
        outcome = await run_process_async(
            "demo", "--script", "lines.txt", "--db", str(tmp_path / "demo.db"), cwd=tmp_path,
            env={"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url})
        assert outcome.code == 0, outcome.err
        [turn] = otlp.named("threadline.turn")
        [agent] = otlp.named("invoke_agent support")
        [chat] = otlp.named("chat ")
    assert turn.resource["service.name"] == "threadline"
    assert agent.trace_id == chat.trace_id == turn.trace_id
    assert chat.attributes["gen_ai.provider.name"] == "offline"


def overloaded_primary(body: dict[str, Any]) -> Reply:
    if body["model"] == PRIMARY:
        return error(529, "overloaded_error", "Overloaded", retry_after=0)
    return text("Locker 12 is yours.")


async def test_a_model_passed_over_and_the_thinking_show_on_the_spans(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp, FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        anthropic.responder = overloaded_primary
        path = config(tmp_path, anthropic, telegram,
                      f"tracing:\n  enabled: true\n  endpoint: {otlp.url}",
                      agent=f"    model: [{PRIMARY}, {FALLBACK}]\n    thinking: 2048\n")
        env = {"ANTHROPIC_API_KEY": "test-key", "TELEGRAM_BOT_TOKEN": telegram.token}
        async with threadline_run(path, env):
            await telegram.deliver(telegram.message(private_chat(PERSON), PERSON,
                                                    "which locker is mine?"))
            await telegram.wait_for_calls("sendMessage", 1)

    passed, answered = otlp.named("chat ")
    [agent] = otlp.named("invoke_agent")
    # The first model stayed overloaded past its one retry: its call ends in error, says it
    # was passed over, and the SDK's span under it counts the retry.
    assert passed.attributes["gen_ai.request.model"] == PRIMARY
    assert passed.attributes["threadline.model.passed_over"] is True
    assert passed.attributes["error.type"] == "ModelUnavailableError"
    assert passed.status_code == 2  # ERROR
    [retried] = [s for s in otlp.spans if s.parent_span_id == passed.span_id]
    assert retried.attributes["http.request.resend_count"] == 1
    assert retried.attributes["http.response.status_code"] == 529
    # The fallback answered, thinking within its budget.
    assert answered.attributes["gen_ai.response.model"] == FALLBACK
    assert answered.status_code != 2 and "threadline.model.passed_over" not in answered.attributes
    assert answered.attributes["threadline.thinking"] == "budget"
    assert answered.attributes["threadline.thinking.budget_tokens"] == 2048
    assert answered.attributes["threadline.response.reasoning_blocks"] == 1
    assert agent.status_code != 2 and agent.attributes["threadline.stop_reason"] == "end_turn"


async def test_check_tries_the_trace_receiver(tmp_path: Path) -> None:
    async with FakeOtlp() as otlp, FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        path = config(tmp_path, anthropic, telegram, "")
        env = {"ANTHROPIC_API_KEY": "test-key", "TELEGRAM_BOT_TOKEN": telegram.token,
               "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url}
        checked = await run_process_async("check", str(path), cwd=tmp_path, env=env)
        assert checked.code == 0, checked.err
        assert (f"ok    tracing: OTLP/HTTP to {otlp.url}/v1/traces (service threadline; "
                "message content off)") in checked.out
        assert otlp.requests == 1 and otlp.spans == []
    # The receiver is gone: the check fails and names where it tried.
    gone = await run_process_async("check", str(path), cwd=tmp_path, env=env)
    assert gone.code == 1
    [line] = [line for line in gone.err.splitlines() if line.startswith("FAIL  tracing: ")]
    assert f"the trace receiver at {otlp.url}/v1/traces could not be reached" in line


async def test_with_tracing_off_a_turn_loads_no_tracing_sdk(tmp_path: Path) -> None:
    """Off costs nothing: the OpenTelemetry SDK and its exporter are never imported (the
    Anthropic SDK imports the OpenTelemetry API for its own spans, tracing or not)."""
    (tmp_path / "lines.txt").write_text("@support my order is 4417-B\n", encoding="utf-8")
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "threadline", "demo", "--script", "lines.txt",
        "--db", str(tmp_path / "demo.db"), cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    out, err = await done.communicate()
    assert done.returncode == 0, err.decode()[-2000:]
    assert "support> " in out.decode()  # the turn was answered
    imported = {line.rsplit("|", 1)[1].strip() for line in err.decode().splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "threadline.tracing.spans" in imported  # the trace is real
    assert sorted(m for m in imported if m.startswith(
        ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto"))) == []


BLOCK_THE_SDK = '''\
import importlib.abc
import sys


class Missing(importlib.abc.MetaPathFinder):
    """As if the tracing extra were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Missing())
'''


async def test_tracing_on_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_THE_SDK, encoding="utf-8")
    async with FakeOtlp() as otlp, FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        path = config(tmp_path, anthropic, telegram,
                      f"tracing:\n  enabled: true\n  endpoint: {otlp.url}")
        ran = await run_process_async(
            "run", str(path), "--no-input", cwd=tmp_path,
            env={"ANTHROPIC_API_KEY": "test-key", "TELEGRAM_BOT_TOKEN": telegram.token,
                 "PYTHONPATH": str(site)})
        assert otlp.requests == 0
    assert ran.code == 2, ran.err
    assert "pip install 'threadline[tracing]'" in ran.err
    assert "Traceback" not in ran.err
