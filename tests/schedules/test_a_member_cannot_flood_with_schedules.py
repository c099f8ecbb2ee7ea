"""A hostile member on Slack cannot turn schedules into a flood: a cron with a seconds field
or firing more often than the operator's floor is refused, saying the floor, from the
`schedule` tool and from `/remind`; a person, and a conversation, keep at most the operator's
number of active schedules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import FakeAnthropic, Reply, text, tool_use
from tests.fakes.slack import FakeSlack
from tests.runtime.in_process import running_in_process
from tests.runtime.platforms import platform
from threadline.backends.sql.schedules import SqlScheduleBook

LIMITS = """\
scheduler:
  min_interval_minutes: 10
  max_per_person: 2
  max_per_conversation: 3
"""


def flood_through_the_tool(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return text("I could not schedule that.")
    return tool_use("schedule", {"when": "cron * * * * * *", "text": "ping"})


async def remind(slack: FakeSlack, events_url: str, words: str, *, user: str) -> str:
    """`/remind words` as `user` in #general; the answer posted to its response_url."""
    before = len(slack.responses)
    payload = slack.slash_command("/remind", words, user=user)
    assert await slack.deliver_command(events_url, payload) == (200, "")
    responses = await slack.wait_for_responses(before + 1)
    return str(responses[before][1]["text"])


async def test_fast_crons_are_refused_with_the_floor_and_caps_hold(tmp_path: Path) -> None:
    async with platform("slack", streaming=False) as where, FakeAnthropic() as anthropic:
        slack: FakeSlack = where.fake
        slack.add_user("U0ALICE", display_name="Alice")
        slack.add_user("U0BOB", display_name="Bob")
        slack.add_channel("C0GENERAL", name="general")
        anthropic.responder = flood_through_the_tool
        url = where.extra["events_url"]
        async with running_in_process(tmp_path, "slack", where, anthropic.url,
                                      more_yaml=LIMITS) as runtime:
            event = slack.message_event(f"<@{slack.bot_user_id}> ping me every second")
            await slack.deliver_event(url, event)
            await anthropic.wait_for_requests(2)
            [result] = [b for b in anthropic.bodies[1]["messages"][-1]["content"]
                        if b["type"] == "tool_result"]
            refusal = json.dumps(result["content"])
            assert "not scheduled" in refusal and "at most once every 10 minutes" in refusal

            for cron in ("cron * * * * * * ping", "cron */5 * * * * ping"):
                answer = await remind(slack, url, cron, user="U0ALICE")
                assert answer.startswith("Not scheduled:"), answer
                assert "at most once every 10 minutes" in answer

            assert "OK, I'll post it" in await remind(slack, url, "cron 0 9 * * 1 to stand up",
                                                      user="U0ALICE")
            assert "OK, I'll post it" in await remind(slack, url, "in 1 hour to a", user="U0ALICE")
            mine = await remind(slack, url, "in 2 hours to b", user="U0ALICE")
            assert "alice already has 2 active schedules" in mine
            assert "OK, I'll post it" in await remind(slack, url, "in 1 hour to c", user="U0BOB")
            full = await remind(slack, url, "in 3 hours to d", user="U0BOB")
            assert "this conversation already has 3 active schedules" in full

            book = SqlScheduleBook(runtime.store)
            kept = await book.listed()
        assert sorted(s.text for s in kept) == ["a", "c", "stand up"]
