"""The console's feedback page: each agent's satisfaction day by day, and the down-voted
replies with what the agent saw (the prompt its reply record keeps, part by part).

Votes come from the backend's `feedback` part beside the history (`parts_beside`); a backend
that keeps none shows a page that says so. A down-voted reply is matched to its reply record
by the reply's id (the record's `outbound_id`), among the agent's records of that conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from threadline.feedback.votes import DailyFeedback, FeedbackBook, Vote
from threadline.history.model import utc_now
from threadline.inspector.console.charts import Chart, plot
from threadline.inspector.record import ReplyRecord
from threadline.inspector.records import ReplyRecords

DOWN_VOTES_SHOWN = 50
RECORDS_SEARCHED = 200  # an agent's newest records of a conversation searched for a reply


@dataclass(frozen=True, slots=True)
class DownVoted:
    """A down-voted reply: the vote, and its reply record with detail (None: not recorded,
    or pruned by retention)."""

    vote: Vote
    record: ReplyRecord | None

    def as_dict(self) -> dict[str, Any]:
        return {"vote": self.vote.as_dict(),
                "record": self.record.as_dict() if self.record is not None else None}


async def satisfaction(book: FeedbackBook, *, days: float) -> dict[str, list[DailyFeedback]]:
    """Each agent's votes per day over the last `days`, oldest day first."""
    by_agent: dict[str, list[DailyFeedback]] = {}
    for day in await book.daily(since=utc_now() - timedelta(days=days)):
        by_agent.setdefault(day.agent, []).append(day)
    return dict(sorted(by_agent.items()))


async def down_voted(book: FeedbackBook, records: ReplyRecords, *,
                     limit: int = DOWN_VOTES_SHOWN) -> list[DownVoted]:
    """The newest down-votes, each with the record of the reply it judged."""
    votes = await book.recent(vote="down", limit=limit)
    return [DownVoted(vote, await _record_of(records, vote)) for vote in votes]


async def _record_of(records: ReplyRecords, vote: Vote) -> ReplyRecord | None:
    listed: Sequence[ReplyRecord] = await records.recent(
        vote.conversation_id, agent=vote.agent, limit=RECORDS_SEARCHED)
    found = next((r for r in listed if r.outbound_id == vote.reply_id), None)
    return await records.get(found.id) if found is not None else None


def satisfaction_charts(days: dict[str, list[DailyFeedback]]) -> dict[str, Chart]:
    """Each agent's share of up-votes, day by day, as a chart (days without votes left out)."""
    return {agent: plot("satisfied", agent, "%", [(d.day, d.satisfaction * 100)
                                                  for d in found if d.satisfaction is not None])
            for agent, found in days.items()}


def as_rows(days: dict[str, list[DailyFeedback]]) -> dict[str, list[dict[str, Any]]]:
    """The satisfaction table as JSON-ready rows."""
    return {agent: [{"day": d.day, "up": d.up, "down": d.down,
                     "satisfaction": d.satisfaction} for d in found]
            for agent, found in days.items()}
