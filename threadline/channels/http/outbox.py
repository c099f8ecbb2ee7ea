"""Replies of the `http` platform, kept until the caller has them: the outbox.

`send_reply` only keeps a reply here (one write, idempotent by `reply_id`) and returns; the
reply ledger then records it delivered to the platform, which for this platform means "kept".
From here a reply is either posted to the configured callback (`callback.CallbackSender`:
claimed by one replica at a time, retried with backoff, marked delivered on a 2xx) or read by
the caller through the signed fetch endpoint, by cursor. Nothing leaves the outbox when the
callback is down: it waits, across restarts when the backend keeps it (the SQL backend's
`threadline_http_replies`), and is posted once the callback answers again. Replies are deleted
`keep_replies_days` after they were kept: those the callback took or, without a callback, all.

`MemoryReplyOutbox` is for a backend that keeps no such table (the memory backend): replies
waiting for a callback do not outlive the process, and the channel says so when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class HttpReply:
    """One agent's reply as the caller receives it; `cursor` orders a channel's replies."""

    reply_id: str
    channel: str
    conversation_id: str
    in_reply_to: str
    turn_id: str  # the stored turn answered: forgetting its author deletes the reply
    agent: str | None
    text: str
    created_us: int
    cursor: int = 0
    attempts: int = 0
    delivered_us: int | None = None

    def wire(self) -> dict[str, object]:
        """The reply as JSON fields, the same in a callback and in a fetch."""
        return {"type": "reply", "reply_id": self.reply_id, "cursor": self.cursor,
                "conversation_id": self.conversation_id, "in_reply_to": self.in_reply_to,
                "agent": self.agent, "text": self.text, "created_us": self.created_us}


@runtime_checkable
class ReplyOutbox(Protocol):
    """Where an `http` channel keeps replies until the caller has them (module docstring).

    An outbox need not order replies of different channels, nor keep delivered ones forever;
    it must keep every undelivered one, and let one claimer at a time post it."""

    async def keep(self, reply: HttpReply) -> HttpReply:
        """Keep `reply` (a second keep of the same `reply_id` changes nothing); as kept, with
        its cursor."""
        ...

    async def claim_due(self, channel: str, *, now_us: int, lease_us: int,
                        limit: int) -> list[HttpReply]:
        """Undelivered replies of `channel` due by `now_us`, oldest first, each claimed until
        `now_us + lease_us` (another claimer skips them until then)."""
        ...

    async def delivered(self, reply_id: str, *, now_us: int) -> None:
        """The callback accepted the reply: it is not posted again."""
        ...

    async def failed(self, reply_id: str, *, retry_at_us: int, error: str) -> None:
        """The callback did not accept it: one more attempt counted, the next at
        `retry_at_us`."""
        ...

    async def after(self, channel: str, *, cursor: int, limit: int,
                    conversation_id: str | None = None) -> list[HttpReply]:
        """Replies of `channel` (of one conversation, if given) after `cursor`, oldest
        first."""
        ...

    async def undelivered(self, channel: str) -> int:
        """How many replies of `channel` wait for the callback."""
        ...

    async def prune(self, channel: str, *, before_us: int, delivered_only: bool) -> int:
        """Delete replies of `channel` kept since before `before_us` (only those the callback
        took, when `delivered_only`); how many."""
        ...


class MemoryReplyOutbox:
    """A `ReplyOutbox` in this process's memory (see the module docstring)."""

    def __init__(self) -> None:
        self._replies: dict[str, HttpReply] = {}
        self._due_us: dict[str, int] = {}
        self._cursor = 0

    async def keep(self, reply: HttpReply) -> HttpReply:
        if reply.reply_id not in self._replies:
            self._cursor += 1
            self._replies[reply.reply_id] = replace(reply, cursor=self._cursor)
            self._due_us[reply.reply_id] = 0
        return self._replies[reply.reply_id]

    async def claim_due(self, channel: str, *, now_us: int, lease_us: int,
                        limit: int) -> list[HttpReply]:
        due = [r for r in self._replies.values() if r.channel == channel
               and r.delivered_us is None and self._due_us[r.reply_id] <= now_us][:limit]
        for reply in due:
            self._due_us[reply.reply_id] = now_us + lease_us
        return due

    async def delivered(self, reply_id: str, *, now_us: int) -> None:
        self._replies[reply_id] = replace(self._replies[reply_id], delivered_us=now_us)

    async def failed(self, reply_id: str, *, retry_at_us: int, error: str) -> None:
        reply = self._replies[reply_id]
        self._replies[reply_id] = replace(reply, attempts=reply.attempts + 1)
        self._due_us[reply_id] = retry_at_us

    async def after(self, channel: str, *, cursor: int, limit: int,
                    conversation_id: str | None = None) -> list[HttpReply]:
        return [r for r in self._replies.values() if r.channel == channel and r.cursor > cursor
                and conversation_id in (None, r.conversation_id)][:limit]

    async def undelivered(self, channel: str) -> int:
        return sum(1 for r in self._replies.values()
                   if r.channel == channel and r.delivered_us is None)

    async def prune(self, channel: str, *, before_us: int, delivered_only: bool) -> int:
        old = [r.reply_id for r in self._replies.values() if r.channel == channel
               and r.created_us < before_us and (r.delivered_us is not None
                                                 or not delivered_only)]
        for reply_id in old:
            del self._replies[reply_id], self._due_us[reply_id]
        return len(old)
