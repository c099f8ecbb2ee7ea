"""One member cannot silence the bot for a whole Slack channel: `/human` at the channel's top
level hands over only the asker's own thread (the bot answers everyone else), and `/human` in
fifteen threads tells the team's desk once. Through `threadline run`'s runtime on the Slack
fake; what crossed the wire is checked."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.slack import FakeSlack
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform
from tests.runtime.test_listeners_survive_bad_events import until

DESK = "handoff:\n  notify: {channel: slack, chat: C0TEAM}\n"


async def test_human_at_the_top_level_hands_over_only_the_askers_thread(
        tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_user("U0BOB", display_name="Bob")
        url = where.extra["events_url"]

        def posts(**where_: str | None) -> list[str]:
            return [str(c.params["text"]) for c in slack.calls_to("chat.postMessage")
                    if all(c.params.get(k) == v for k, v in where_.items())]

        async with running_in_process(tmp_path, "slack", where, anthropic.url, more_yaml=DESK):
            asked = slack.message_event("/human", user="U0ALICE")
            await slack.deliver_event(url, asked)
            # The desk is told first, then the asker is answered in their thread.
            await until(lambda: len(posts(channel="C0TEAM")) == 1
                        and len(posts(thread_ts=asked["ts"])) == 1)
            [answer] = posts(thread_ts=asked["ts"])
            assert "A person will answer here" in answer

            bob = slack.message_event(f"<@{slack.bot_user_id}> what are your hours?",
                                      user="U0BOB")
            await slack.deliver_event(url, bob)
            await until(lambda: len(posts(thread_ts=bob["ts"])) == 1)  # the bot answers Bob

            for _ in range(15):  # /human in fifteen threads of her own
                thread = slack.message_event("/human", user="U0ALICE")
                await slack.deliver_event(url, thread)
                await until(lambda ts=thread["ts"]: len(posts(thread_ts=ts)) == 1)
        assert len(posts(channel="C0TEAM")) == 1
        assert len(anthropic.requests) == 1  # Bob's question, and nothing of Alice's
