"""History retention: each conversation keeps its turns for the days its longest key says.

A default of 30 days, 7 for one Slack workspace and 90 for one of that workspace's channels;
turns 10, 40 and 100 days old in each. The background pruner deletes exactly the expired ones
(summaries too), on every store, and says in the log how far it got.
"""

from __future__ import annotations

from datetime import timedelta

from structlog.testing import capture_logs

from tests.history.helpers import ANN
from threadline.history.model import StoredMessage, utc_now
from threadline.history.retention import HistoryRetention, retention_days
from threadline.history.store import ConversationStore

PER_KEY = {"slack:T1": 7.0, "slack:T1:C9": 90.0, "discord:G5": None}


def test_the_longest_matching_key_wins() -> None:
    assert retention_days("slack:T1:C1:1700.1", 30, PER_KEY) == 7
    assert retention_days("slack:T1:C9", 30, PER_KEY) == 90
    assert retention_days("slack:T1:C9:1700.1", 30, PER_KEY) == 90
    assert retention_days("slack:T10:C1", 30, PER_KEY) == 30  # not a prefix on a boundary
    assert retention_days("discord:G5:C1", 30, PER_KEY) is None  # kept forever
    assert retention_days("telegram:-100", None, PER_KEY) is None


async def test_background_pruning_deletes_only_expired_turns(store: ConversationStore) -> None:
    now = utc_now()
    conversations = ["slack:T1:C1", "slack:T1:C9", "telegram:-100", "discord:G5:C1"]
    await store.append_many([
        StoredMessage(conversation_id=cid, participant=ANN, content=f"{days} days ago",
                      timestamp=now - timedelta(days=days))
        for cid in conversations for days in (100, 40, 10)])
    retention = HistoryRetention(store, 30, PER_KEY, every=3600)
    with capture_logs() as logs:
        retention.start()
        await retention.pass_done.wait()
        await retention.stop()

    kept = {cid: [m.content for m in await store.get(cid, include_summaries=True)]
            for cid in conversations}
    assert kept == {
        "slack:T1:C1": [],
        "slack:T1:C9": ["40 days ago", "10 days ago"],
        "telegram:-100": ["10 days ago"],
        "discord:G5:C1": ["100 days ago", "40 days ago", "10 days ago"],
    }
    [done] = [e for e in logs if e["event"] == "history.retention.done"]
    assert done["removed"] == 6 and done["conversations"] == 4
