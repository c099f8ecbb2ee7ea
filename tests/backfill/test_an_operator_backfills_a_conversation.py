"""`threadline history backfill CONVERSATION`: an operator fills a Slack thread the history
does not know from the platform (the fake Slack's conversations.replies), through the
channel the config names, taking no events; a conversation already held is refused, and a
Telegram one says why it cannot be read."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.helpers import run_process_async
from tests.fakes.slack import FakeSlack
from tests.runtime.platforms import platform, write_config
from threadline.backends.sql import SqlConversationStore

_TAG = re.compile(r"msg-\d\d")


async def test_an_operator_fills_a_thread_then_is_refused_a_second_time(
        tmp_path: Path) -> None:
    async with platform("slack") as where:
        slack: FakeSlack = where.fake
        root = slack.said_earlier("msg-01 the plan for Friday")
        for n in range(2, 6):
            slack.said_earlier(f"msg-{n:02d} agreed", thread_ts=root["ts"])
        config = write_config(tmp_path, "slack", where, "http://127.0.0.1:9")
        env = {**where.env, "ANTHROPIC_API_KEY": "test-key"}
        assert (await run_process_async("db", "upgrade", "--config", str(config),
                                        cwd=tmp_path, env=env)).code == 0
        thread = f"slack:{slack.team_id}:C0GENERAL:{root['ts']}"
        filled = await run_process_async("history", "backfill", thread, "--config",
                                         str(config), cwd=tmp_path, env=env)
        again = await run_process_async("history", "backfill", thread, "--config",
                                        str(config), cwd=tmp_path, env=env)
    assert filled.code == 0, filled.err
    assert "read 5 earlier messages through slack, stored 5" in filled.out
    assert again.code == 2
    assert "already holds 5 turns" in again.err
    async with SqlConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'threadline.db'}") as store:
        turns = await store.get(thread)
    assert [_TAG.findall(t.content) for t in turns] == [[f"msg-{n:02d}"] for n in range(1, 6)]
    assert turns[0].id == f"{thread}:{root['ts']}"  # the parent, as the thread's opening turn


async def test_telegram_cannot_be_backfilled_and_says_why(tmp_path: Path) -> None:
    async with platform("telegram") as where:
        config = write_config(tmp_path, "telegram", where, "http://127.0.0.1:9")
        env = {**where.env, "ANTHROPIC_API_KEY": "test-key"}
        assert (await run_process_async("db", "upgrade", "--config", str(config),
                                        cwd=tmp_path, env=env)).code == 0
        refused = await run_process_async("history", "backfill", "telegram:42", "--config",
                                          str(config), cwd=tmp_path, env=env)
    assert refused.code != 0
    assert "Telegram's Bot API gives a bot no chat history" in refused.err
