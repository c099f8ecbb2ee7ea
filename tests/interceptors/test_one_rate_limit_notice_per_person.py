"""Over the rate limit in several threads, a member on Slack is told once per window, not once
per thread: the limit's notice is not itself a flood. Through `threadline run`'s runtime on the
Slack fake; what crossed the wire is counted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.slack import FakeSlack
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform, say
from tests.runtime.test_listeners_survive_bad_events import until
from threadline.backends.sql import SqlConversationStore

LIMIT = "access:\n  rate_limit: {turns: 1, per_seconds: 3600}\n"
THREADS = 6


async def test_limited_in_six_threads_is_told_once(tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        slack.add_user("U0ALICE", display_name="Alice")
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      more_yaml=LIMIT) as runtime:
            for thread in range(THREADS):  # the same person, a thread each
                await say("slack", where, thread, f"question {thread}")
            store: SqlConversationStore = runtime.store
            await until(lambda: len(anthropic.requests) == 1)
            async with asyncio.timeout(30):  # every thread's turn taken (answered or limited)
                while await store.inbox.conversations_waiting():  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        posts = [str(c.params["text"]) for c in slack.calls_to("chat.postMessage")]
    notices = [p for p in posts if "faster than I can answer" in p]
    assert len(anthropic.requests) == 1
    assert len(notices) == 1, posts
