"""`threadline run` with an agent on an OpenAI-compatible server and a conversation budget.

Lines are piped to the local channel (`stdin: true`); the first is answered by the server
through the real SDK, the second finds the conversation's budget used up and gets the kind
reply without a request; both questions and both replies are stored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.openai import FakeOpenAI, text
from tests.launch import spawn
from threadline.backends.sql.store import SqlConversationStore


async def test_an_openai_compatible_agent_answers_until_the_budget_is_spent(
        tmp_path: Path) -> None:
    db = tmp_path / "threadline.db"
    async with FakeOpenAI(models=("llama3.1",)) as fake:
        fake.script(text("The Pro plan renews monthly.", usage={
            "prompt_tokens": 700, "completion_tokens": 20, "total_tokens": 720,
            "prompt_tokens_details": {"cached_tokens": 600}}))
        config = tmp_path / "threadline.yaml"
        config.write_text(f"""\
store:
  url: sqlite+aiosqlite:///{db}
providers:
  local:
    type: openai
    base_url: {fake.url}
    model: llama3.1
    max_retries: 1
spend:
  per_conversation_daily_tokens: 500
ops:
  enabled: false
channels:
  local:
    type: local
    stdin: true
agents:
  support:
    provider: local
    channels: [local]
""", encoding="utf-8")
        process = await spawn("run", str(config), cwd=tmp_path,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(60):
            out, err = await process.communicate(
                b"@support how often does Pro renew?\n@support and the price?\n")
        assert process.returncode == 0, err.decode()

    assert [b["model"] for b in fake.bodies] == ["llama3.1"]  # one model call, not two
    replies = [line for line in out.decode().splitlines() if line.startswith("support> ")]
    assert replies[0] == "support> The Pro plan renews monthly."
    assert replies[1].startswith("support> This conversation's daily budget for answers is "
                                 "used up (720 of 500 tokens). It resets at 00:00 UTC (in ")
    async with SqlConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        turns = [(m.participant.id, m.content) for m in await store.get("local:main")]
    assert turns[0] == ("you", "@support how often does Pro renew?")
    assert turns[1] == ("support", "The Pro plan renews monthly.")
    assert turns[2] == ("you", "@support and the price?")
    assert turns[3][1] == replies[1].removeprefix("support> ")
