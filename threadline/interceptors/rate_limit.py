"""Rate limiting per conversation, per user in a conversation and per person, with token buckets.

Why it exists: one chatty user, a script, or two bots answering each other must not run up the
model bill or take the model away from everyone else. A limited person gets one short polite
reply (or, if configured, none) per window (the longest `per_seconds` of the limits), however
many threads and conversations they are limited in, so the limit is not itself a flood; the
log says which limit was hit each time.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from threadline.errors import ConfigError
from threadline.history.model import StoredMessage
from threadline.history.speakers import identity_of
from threadline.interceptors.base import CallNext
from threadline.turn import AgentResult, TurnContext

DEFAULT_REPLY = "You are sending messages faster than I can answer. Please wait a moment."


@dataclass(frozen=True, slots=True)
class Rate:
    """`turns` turns per `per_seconds`, with bursts of up to `turns`."""

    turns: int
    per_seconds: float

    def __post_init__(self) -> None:
        if self.turns < 1 or self.per_seconds <= 0:
            raise ConfigError(
                f"rate limit {self.turns} turns per {self.per_seconds} s is not usable: "
                "turns must be >= 1 and per_seconds > 0"
            )


class TokenBucket:
    """A bucket of `capacity` tokens refilled continuously at `rate.turns / rate.per_seconds`."""

    __slots__ = ("capacity", "refill_per_second", "tokens", "updated")

    def __init__(self, rate: Rate, now: float) -> None:
        self.capacity = float(rate.turns)
        self.refill_per_second = rate.turns / rate.per_seconds
        self.tokens = self.capacity
        self.updated = now

    def take(self, now: float) -> bool:
        """Spend one token if there is one; False when the bucket is empty."""
        elapsed = max(now - self.updated, 0.0)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.refill_per_second)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class _Buckets:
    """Buckets by key, forgetting the least recently used beyond `max_keys` (bounded memory)."""

    def __init__(self, rate: Rate, max_keys: int) -> None:
        self.rate = rate
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def take(self, key: str, now: float) -> bool:
        """Spend one of `key`'s turns; False when it has none left now."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, now)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)


class RateLimitInterceptor:
    """Answers over-eager conversations and people with one polite reply, then silence.

    `per_person` counts a person's turns everywhere (by platform identity), `per_user` in one
    conversation. `reply=None` drops limited turns silently (they are still stored). The clock
    is injectable so tests can move time instead of waiting for it.
    """

    def __init__(
        self,
        *,
        per_conversation: Rate | None = Rate(20, 60.0),
        per_user: Rate | None = Rate(6, 60.0),
        per_person: Rate | None = None,
        reply: str | None = DEFAULT_REPLY,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reply = reply
        self.clock = clock
        self._conversations = _Buckets(per_conversation, max_keys) if per_conversation else None
        self._users = _Buckets(per_user, max_keys) if per_user else None
        self._people = _Buckets(per_person, max_keys) if per_person else None
        # When each person was last told they are limited: told again only a window later.
        self._told: OrderedDict[str, float] = OrderedDict()
        self._window = max((rate.per_seconds for rate in (per_conversation, per_user, per_person)
                            if rate is not None), default=0.0)
        self._max_keys = max_keys

    def verdict(self, inbound: StoredMessage) -> tuple[str, str] | None:
        """None when `inbound` may be answered; else the limit it hit and what to reply
        (empty: its person was told within the last window, and is not told again)."""
        limit = self._limit_hit(inbound)
        if limit is None:
            return None
        return limit, self.reply or "" if self._first_notice(inbound) else ""

    def _limit_hit(self, inbound: StoredMessage) -> str | None:
        now = self.clock()
        # Agents talking to each other are bounded by the team's hop limit, not by user limits.
        participant = inbound.participant
        person = identity_of(inbound)
        if self._people is not None and person is not None and not self._people.take(
            person, now
        ):
            return "per_person"
        if self._users is not None and participant.kind == "user" and not self._users.take(
            f"{inbound.conversation_id}\x00{participant.id}", now
        ):
            return "per_user"
        if self._conversations is not None and not self._conversations.take(
            inbound.conversation_id, now
        ):
            return "per_conversation"
        return None

    def _first_notice(self, inbound: StoredMessage) -> bool:
        """Whether this limited turn's person has not been told in the last window (and note
        that they are told now)."""
        person = identity_of(inbound) or f"{inbound.conversation_id}\x00{inbound.participant.id}"
        now = self.clock()
        last = self._told.get(person)
        if last is not None and now - last < self._window:
            return False
        self._told[person] = now
        self._told.move_to_end(person)
        if len(self._told) > self._max_keys:
            self._told.popitem(last=False)
        return True

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        verdict = self.verdict(context.inbound)
        if verdict is None:
            return await call_next()
        limit, reply = verdict
        context.log.warning("turn.rate_limited", limit=limit,
                            participant=context.inbound.participant.id,
                            action="replied" if reply else "dropped")
        return context.agent.reply_result(context, reply, stop_reason="rate_limited")
