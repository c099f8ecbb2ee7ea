"""Two `threadline run` processes on one PostgreSQL: every due schedule is posted once.

A reminder set through the agent's tool on one replica, and fifty more due at the same moment
(added as an operator would), are claimed by whichever replica looks first; none is posted
twice, none is lost.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from tests.runtime.test_run_kill9_answers_everything import rounds_pass, until
from tests.runtime.test_run_two_processes_postgres import Rig, rig  # noqa: F401 - the fixture
from tests.schedules.test_reminder_through_the_tool import (
    MORE_ROUNDS,
    REMINDER,
    ROUND_DONE,
    remind_in,
)
from threadline.backends.sql import SqlConversationStore
from threadline.backends.sql.schedules import SqlScheduleBook
from threadline.schedules import Schedule

pytestmark = pytest.mark.postgres
MORE = 50


async def test_two_replicas_post_each_due_schedule_once(rig: Rig) -> None:  # noqa: F811
    rig.anthropic.responder = remind_in(3)
    status, _ = await rig.send(0, rig.event("remind me in 3 seconds", thread="1700000001.000100"))
    assert status == 200
    await until(lambda: "Done, I will remind you." in rig.answers())
    due = datetime.now(UTC) + timedelta(seconds=2)
    team = rig.slack.team_id
    async with SqlConversationStore(rig.store_url) as store:
        book = SqlScheduleBook(store)
        for n in range(MORE):
            thread = f"1700000002.{n:06d}"
            await book.add(Schedule(
                conversation_id=f"slack:{team}:C0GENERAL:{thread}", agent="support",
                kind="message", text=f"scheduled post {n}", due_at=due, timezone="UTC",
                created_by="operator", channel="slack",
                origin={"channel_type": "slack", "channel_id": "C0GENERAL",
                        "thread_id": thread, "scope": "thread"}))
        wanted = {REMINDER, *(f"scheduled post {n}" for n in range(MORE))}
        await until(lambda: wanted <= set(rig.answers()))
        for worker in rig.workers:  # more scheduler rounds on both replicas: none posts again
            await rounds_pass(worker.log, ROUND_DONE, MORE_ROUNDS)
        await rig.settled()
        answers = rig.answers()
        assert [text for text in wanted if answers[text] != 1] == []
        fired = Counter(s.fired for s in await book.listed(states=("done",), limit=1000))
        assert fired == Counter({1: MORE + 1})
