"""A person's vote on an agent's reply, and what keeps votes (`FeedbackBook`).

One vote per person per reply: a second press replaces the first (its vote, its time, and its
reason, unless it repeats the same vote without one: pressing 👎 again keeps why), so a person
who changes their mind is counted once, as they stand now. The voter is a
platform identity (`slack:T1:U1`, `telegram:42`), so `people forget` and `people export` find
a person's votes by the identities linked to them, like their turns.

The memory backend keeps `MemoryFeedbackBook`; the SQL backend's is
`threadline.backends.sql.feedback.SqlFeedbackBook`, in the history's own database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol

VoteValue = Literal["up", "down"]
VOTES: tuple[VoteValue, ...] = ("up", "down")


@dataclass(frozen=True, slots=True)
class Vote:
    """Who said what of which reply, and when."""

    reply_id: str  # the stored reply's id (`reply_turn_id`), as its reply record's outbound_id
    conversation_id: str
    agent: str
    voter: str  # the voter's platform identity
    vote: VoteValue
    voted_at: datetime
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The vote as JSON-ready data (`voted_at` as ISO 8601)."""
        data = asdict(self)
        data["voted_at"] = self.voted_at.isoformat()
        return data


@dataclass(frozen=True, slots=True)
class DailyFeedback:
    """One agent's votes on one day (UTC): the console's satisfaction over time."""

    agent: str
    day: str  # YYYY-MM-DD
    up: int
    down: int

    @property
    def satisfaction(self) -> float | None:
        """The share of up-votes (None: no votes)."""
        total = self.up + self.down
        return self.up / total if total else None


class FeedbackBook(Protocol):
    """Keeps votes; see the module docstring. A backend that keeps none gives None, and the
    feedback feature is then off."""

    async def cast(self, vote: Vote) -> VoteValue | None:
        """Store `vote`, replacing this voter's earlier vote on the reply (the same vote given
        without a reason keeps the earlier reason); the earlier vote's value (None: the
        first)."""
        ...

    async def on_reply(self, reply_id: str) -> list[Vote]:
        """Every vote on one reply, oldest first."""
        ...

    async def recent(self, *, agent: str | None = None, vote: VoteValue | None = None,
                     limit: int = 50) -> list[Vote]:
        """Newest first, optionally of one agent or one vote value."""
        ...

    async def daily(self, *, since: datetime) -> list[DailyFeedback]:
        """Votes counted per agent and day since `since`, oldest day first."""
        ...

    async def by_voters(self, voters: Iterable[str]) -> list[Vote]:
        """Every vote these identities cast (an export)."""
        ...

    async def forget_voters(self, voters: Iterable[str]) -> int:
        """Delete every vote these identities cast; how many went."""
        ...


def counted_daily(votes: Iterable[Vote]) -> list[DailyFeedback]:
    """Votes counted per agent and UTC day, oldest day first (then by agent)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for vote in votes:
        key = (vote.voted_at.date().isoformat(), vote.agent)
        tally = counts.setdefault(key, [0, 0])
        tally[0 if vote.vote == "up" else 1] += 1
    return [DailyFeedback(agent=agent, day=day, up=up, down=down)
            for (day, agent), (up, down) in sorted(counts.items())]


class MemoryFeedbackBook:
    """Votes in process memory (the memory backend's: gone at restart, like its turns)."""

    def __init__(self) -> None:
        self._votes: dict[tuple[str, str], Vote] = {}

    async def cast(self, vote: Vote) -> VoteValue | None:
        key = (vote.reply_id, vote.voter)
        earlier = self._votes.pop(key, None)
        if earlier is not None and vote.reason is None and earlier.vote == vote.vote:
            vote = replace(vote, reason=earlier.reason)
        self._votes[key] = vote  # re-inserted: the dict's order stays the order of voting
        return earlier.vote if earlier is not None else None

    async def on_reply(self, reply_id: str) -> list[Vote]:
        return [v for v in self._votes.values() if v.reply_id == reply_id]

    async def recent(self, *, agent: str | None = None, vote: VoteValue | None = None,
                     limit: int = 50) -> list[Vote]:
        found = [v for v in reversed(self._votes.values())
                 if (agent is None or v.agent == agent) and (vote is None or v.vote == vote)]
        return found[:limit]

    async def daily(self, *, since: datetime) -> list[DailyFeedback]:
        return counted_daily(v for v in self._votes.values() if v.voted_at >= since)

    async def by_voters(self, voters: Iterable[str]) -> list[Vote]:
        wanted = set(voters)
        return [v for v in self._votes.values() if v.voter in wanted]

    async def forget_voters(self, voters: Iterable[str]) -> int:
        wanted = set(voters)
        gone = [key for key, v in self._votes.items() if v.voter in wanted]
        for key in gone:
            del self._votes[key]
        return len(gone)


def with_reason(vote: Vote, words: Sequence[str]) -> Vote:
    """`vote` with the reason typed after it (none when nothing was typed)."""
    reason = " ".join(words).strip()
    return replace(vote, reason=reason[:1000] or None)
