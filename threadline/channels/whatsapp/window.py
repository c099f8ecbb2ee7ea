"""WhatsApp's 24-hour customer-service window: when a free-form message may be sent.

WhatsApp delivers a business's free-form message only within 24 hours of the customer's last
message to it; outside that window only an approved message template may be sent (a free-form
one is refused with error 131047). So before each post the channel asks `ServiceWindow`:
- a reply to the customer's own message of the last 24 hours is inside (no store read);
- anything else (a scheduled post, a follow-up, a reply that waited a day for an approval)
  reads when the customer last wrote from the conversation's history, which the backend keeps:
  it survives restarts and every replica sees the same, because every inbound turn is
  recorded there before WhatsApp is told it arrived;
- outside the window the post goes as the template named by `window_template` (the text as
  its one body parameter), and without one it is not sent: `OutsideServiceWindow` says why.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from threadline.errors import ChannelPermanentError
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore

WINDOW = timedelta(hours=24)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class OutsideServiceWindow(ChannelPermanentError):
    """A free-form post outside the customer's 24-hour window with no template to send."""


class ServiceWindow:
    """When each customer last wrote (see the module docstring)."""

    def __init__(self, history: ConversationStore | None, *, clock: Clock = utc_now) -> None:
        self._history = history
        self._clock = clock
        self.length = WINDOW

    def now(self) -> datetime:
        return self._clock()

    async def last_inbound(self, inbound: StoredMessage) -> datetime | None:
        """When someone in the conversation of `inbound` last wrote, as far as is known."""
        since = self._clock() - WINDOW
        if inbound.participant.kind == "user" and inbound.timestamp >= since:
            return inbound.timestamp
        if self._history is None:
            return inbound.timestamp if inbound.participant.kind == "user" else None
        customer = inbound.metadata.channel_id
        people = [customer] if inbound.scope == "dm" and customer else None
        recent = await self._history.get(inbound.conversation_id, since=since,
                                         participant_ids=people, limit=50)
        written = [t.timestamp for t in recent if t.participant.kind == "user"]
        if written:
            return max(written)
        return inbound.timestamp if inbound.participant.kind == "user" else None

    def refusal(self, inbound: StoredMessage, *, channel: str,
                last: datetime | None) -> OutsideServiceWindow:
        """Why a post to `inbound`'s conversation is not sent, in words."""
        when = (f"last wrote {last.isoformat(timespec='minutes')}" if last is not None
                else "has not written in the last 24 hours")
        return OutsideServiceWindow(
            f"whatsapp channel {channel!r}, {inbound.conversation_id}: not sent: the customer "
            f"{when}, so this is outside WhatsApp's 24-hour customer-service window, where "
            "only an approved message template may be sent. Name one in "
            f"channels.{channel}.window_template to send such posts as that template.")
