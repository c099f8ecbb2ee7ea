"""Rate limiting per conversation and per user, with token buckets.

Why it exists: one chatty user, a script, or two bots answering each other must not run up the
model bill or take the model away from everyone else. A limited turn gets a short polite reply
(or, if configured, no reply at all) and the log says which limit was hit.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from threadline.errors import ConfigError
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
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, now)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)


class RateLimitInterceptor:
    """Answers over-eager conversations and users with a polite reply, or not at all.

    `reply=None` drops limited turns silently (they are still stored by capture). The clock is
    injectable so tests can move time instead of waiting for it.
    """

    def __init__(
        self,
        *,
        per_conversation: Rate | None = Rate(20, 60.0),
        per_user: Rate | None = Rate(6, 60.0),
        reply: str | None = DEFAULT_REPLY,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reply = reply
        self.clock = clock
        self._conversations = _Buckets(per_conversation, max_keys) if per_conversation else None
        self._users = _Buckets(per_user, max_keys) if per_user else None

    def _limit_hit(self, context: TurnContext) -> str | None:
        now = self.clock()
        # Agents talking to each other are bounded by the team's hop limit, not by user limits.
        participant = context.inbound.participant
        if self._users is not None and participant.kind == "user" and not self._users.take(
            f"{context.conversation_id}\x00{participant.id}", now
        ):
            return "per_user"
        if self._conversations is not None and not self._conversations.take(
            context.conversation_id, now
        ):
            return "per_conversation"
        return None

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        limit = self._limit_hit(context)
        if limit is None:
            return await call_next()
        context.log.warning("turn.rate_limited", limit=limit,
                            participant=context.inbound.participant.id,
                            action="replied" if self.reply else "dropped")
        return context.agent.reply_result(context, self.reply or "", stop_reason="rate_limited")
