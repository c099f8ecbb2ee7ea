"""A turn through `threadline run` (fake Telegram, fake Anthropic) leaves a reply record that
holds exactly what the model received, on SQLite and on PostgreSQL.

Three private messages; the third asks about the first, which is outside what the agent loads
(`max_turns_to_load: 2`) and comes back by recall; the model searches the conversation once and
answers. The record of that turn must carry the request bodies the fake API received (messages
and system byte for byte), the recalled turn's id, the search call and its result, tokens and
latency of both calls, why the agent answered (a DM) and the Telegram id of the posted reply.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import run_cli
from tests.fakes.anthropic import FakeAnthropic, text, tool_use
from tests.fakes.telegram import FakeTelegram, TgUser, private_chat
from tests.inspector.helpers import threadline_run
from threadline.backends.sql.records import SqlReplyRecords
from threadline.backends.sql.store import SqlConversationStore

PERSON = TgUser(2001, "Dana", username="dana")
SAID = ["my parcel code is ZEBRA-4417, please keep it", "the weather is nice today",
        "which parcel code did I give you?"]


def canonical(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode()


async def test_the_record_holds_the_exact_request(
        tmp_path: Path, sql_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeTelegram() as telegram, FakeAnthropic() as anthropic:
        anthropic.script(text("Noted."), text("It is."),
                         tool_use("conversation_search", {"query": "parcel code"}),
                         text("You gave me ZEBRA-4417."))
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: {sql_url}
model:
  provider: anthropic
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {anthropic.url}
log:
  format: json
ops:
  port: 0
channels:
  telegram:
    type: telegram
    token: ${{TELEGRAM_BOT_TOKEN}}
    base_url: {telegram.api_url}
    base_file_url: {telegram.file_url}
agents:
  support:
    system_prompt: You keep track of parcels.
    memory:
      max_turns_to_load: 2
    channels: [telegram]
""", encoding="utf-8")
        env = {"ANTHROPIC_API_KEY": "test-key", "TELEGRAM_BOT_TOKEN": telegram.token}
        async with threadline_run(config, env):
            for number, words in enumerate(SAID, start=1):
                await telegram.deliver(telegram.message(private_chat(PERSON), PERSON, words))
                await telegram.wait_for_calls("sendMessage", number)
        received = anthropic.bodies
        posted = telegram.sent[-1]

    conversation = f"telegram:{PERSON.id}"
    async with SqlConversationStore(sql_url) as store:
        turns = await store.get(conversation)
        records = await SqlReplyRecords(store).recent(conversation)
        assert [r.inbound_id for r in reversed(records)] == [
            t.id for t in turns if t.participant.kind == "user"]
        newest = await SqlReplyRecords(store).get(records[0].id)
    assert newest is not None and newest.detail is not None
    detail = newest.detail

    # Both calls of the last turn, exactly as the API received them.
    calls = detail["model_calls"]
    assert len(calls) == 2 and newest.model_calls == 2
    for call, body in zip(calls, received[-2:], strict=True):
        request = call["request"]
        assert call["format"] == "anthropic"
        assert canonical(request["messages"]) == canonical(body["messages"])
        assert canonical(request["system"]) == canonical(body["system"])
        assert request["model"] == body["model"] and request["max_tokens"] == body["max_tokens"]
        assert request["tools"] == [tool["name"] for tool in body["tools"]]
        assert call["latency_ms"] > 0
        assert call["usage"]["input_tokens"] + call["usage"]["cache_read_input_tokens"] + call[
            "usage"]["cache_creation_input_tokens"] > 0
    assert newest.input_tokens == sum(c["usage"]["input_tokens"] for c in calls)
    assert newest.output_tokens == sum(c["usage"]["output_tokens"] for c in calls)
    assert newest.cache_write_tokens == sum(
        c["usage"]["cache_creation_input_tokens"] for c in calls) > 0
    assert newest.latency_ms >= sum(c["latency_ms"] for c in calls)

    # What it saw and why.
    first = next(t for t in turns if "ZEBRA-4417" in t.content)
    prompt = detail["prompt"]
    assert first.id in prompt["recalled_ids"]
    # The turn the search matched by its words comes first (others may come by meaning).
    assert prompt["recall_hit_ids"][0] == first.id
    assert set(prompt["recall_hit_ids"]) <= set(prompt["recalled_ids"])
    assert first.id not in prompt["included_ids"]  # not loaded: it came back by recall
    assert [p["part"] for p in prompt["parts"]][-2:] == ["recalled", "newest"]
    assert "ZEBRA-4417" in prompt["parts"][-2]["content"]
    assert newest.addressed_because == "dm"
    assert detail["inbound"]["content"] == SAID[-1]
    assert detail["system_prompt"] == "You keep track of parcels."

    # What it did and said.
    [exchange] = detail["tool_exchanges"]
    assert exchange["call"]["name"] == "conversation_search"
    assert exchange["call"]["input"] == {"query": "parcel code"}
    # Recall already showed that turn, so the search adds nothing the prompt holds.
    assert "beyond what you can see" in exchange["result"]["content"]
    assert newest.reply == "You gave me ZEBRA-4417."
    assert detail["delivered_ids"] == [str(posted["message_id"])]
    assert newest.outbound_id == turns[-1].id and newest.stop_reason == "end_turn"

    # The same record on the command line.
    capsys.readouterr()  # what the store logged above is not the command's output
    shown = await asyncio.to_thread(run_cli, capsys, "inspect", "show", newest.id[:10], "--url",
                                    sql_url, "--json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["detail"]["model_calls"][1]["request"]["messages"] == \
        received[-1]["messages"]
    listed = await asyncio.to_thread(run_cli, capsys, "inspect", "list", conversation, "--url",
                                     sql_url)
    assert listed.code == 0 and len(listed.out.splitlines()) == 3
    assert listed.out.splitlines()[0].startswith(f"{newest.id}  ")
    assert "support (dm)" in listed.out
