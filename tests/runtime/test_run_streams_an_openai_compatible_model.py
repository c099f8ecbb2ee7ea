"""`threadline run` with an agent on an OpenAI-compatible server that streams (vLLM's shape).

On each platform: the model first asks for a tool in a streamed reply (its call assembled from
argument deltas, its reasoning kept for the round), the tool runs, and the answer streams;
the server holds the answer after its first half until the test has seen that half on the
platform, so the partial text is seen before the model finishes, without timing anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.channels.live_rig import words
from tests.fakes.openai import FakeOpenAI, text, tool_call
from tests.runtime.platforms import Platform, platform, say
from tests.runtime.test_run_kill9_answers_everything import start, until
from threadline.backends.sql import SqlConversationStore

TOOL_MODULE = "streamed_order_tools"
TOOL = '''
async def lookup_order(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id}: shipped on 2024-05-02"
'''
ANSWER = words(40)
THOUGHT = "Ann asks about A-1042; look it up first."


def shown(name: str, where: Platform) -> list[str]:
    """Every text the platform has shown, drafts and edits included."""
    if name == "telegram":
        return [str(c.params.get("text", "")) for c in where.fake.calls
                if c.method in ("sendMessageDraft", "sendMessage", "editMessageText")]
    if name == "slack":
        return list(where.fake.messages.values())
    return list(where.fake.contents.values())


@pytest.mark.parametrize("name", ["telegram", "slack", "discord"])
async def test_the_reply_streams_onto_the_platform_and_a_streamed_tool_call_runs(
        tmp_path: Path, name: str) -> None:
    (tmp_path / f"{TOOL_MODULE}.py").write_text(TOOL, encoding="utf-8")
    db = tmp_path / "threadline.db"
    release = asyncio.Event()
    async with platform(name) as where, FakeOpenAI(models=("qwen3",), server="vllm") as model:
        model.script(tool_call("lookup_order", {"order_id": "A-1042"}, id="call_1",
                               reasoning=THOUGHT),
                     text(ANSWER, hold=release))
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
providers:
  local:
    type: openai
    base_url: {model.url}
    model: qwen3
    max_retries: 0
log:
  format: json
ops:
  enabled: false
channels:
  {name}:
{where.channel_yaml}agents:
  support:
    provider: local
    tools: ["{TOOL_MODULE}:lookup_order"]
    channels: [{name}]
""", encoding="utf-8")
        process = await start(config, where, tmp_path / "run.log")
        try:
            await say(name, where, 0, "where is my order A-1042?")
            # The first half of the answer is on the platform while the model still writes.
            await until(lambda: any("word19" in t for t in shown(name, where)))
            assert not any("word39" in t for t in shown(name, where))
            assert len(model.bodies) == 2  # the tool ran between the two model calls
            release.set()
            await until(lambda: any("word39." in t for t in shown(name, where)))
        finally:
            process.terminate()
            await process.wait()
        assert process.returncode == 0, (tmp_path / "run.log").read_text()[-3000:]

    first, second = model.bodies
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assistant, result = second["messages"][-2:]
    assert assistant["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "lookup_order", "arguments": '{"order_id": "A-1042"}'}}]
    assert assistant["reasoning_content"] == THOUGHT  # sent back within the round
    assert result == {"role": "tool", "tool_call_id": "call_1",
                      "content": "order A-1042: shipped on 2024-05-02"}
    assert not any(THOUGHT in t for t in shown(name, where))
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        [reply] = [m for c in await store.list_conversations()
                   for m in await store.get(c.conversation_id) if m.participant.kind == "agent"]
    assert reply.content == ANSWER
    [exchange] = reply.tool_exchanges
    assert exchange.call.input == {"order_id": "A-1042"}
    assert exchange.result.content == "order A-1042: shipped on 2024-05-02"
