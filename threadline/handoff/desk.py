"""Human handoff: a conversation handed to people, the team told, the bot quiet until it is
given back.

    /human [why]  or the agent's `hand_off` tool    ->  handed over; the team is notified once
    every later turn of that conversation           ->  recorded, marked, not answered
    a human's reply                                 ->  the pause moves on `pause_hours`
    /bot on  or the pause running out               ->  the bot answers again, and sees what
                                                        was said meanwhile

Who counts as a human answering: with `team` set (platform identities such as
`slack:T1:U7`), exactly those people; without it, anyone who is neither the customer who asked
nor a bot. Everyone else's turns (the customer's, other bots') are recorded and left
unanswered, and do not move the pause on.

The turns said during a handoff carry `metadata.extra["handoff"]` (`customer`, `human`,
`participant`), which the addressed-only filter keeps for every agent: when the bot answers
again it sees the humans' replies even where they did not address it.

The notice goes to the team where it works (`notify_channel`, a chat id there) through the
reply ledger, keyed by the turn that asked, so a retried or redelivered `/human` notifies
once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import structlog

from threadline.channels.base import Channel
from threadline.handoff.book import Handoff, HandoffBook
from threadline.history.addressing import from_bot
from threadline.history.inbox import TurnInbox
from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.history.speakers import identity_of
from threadline.reply_delivery import LedgeredReply
from threadline.schedules.clock import Clock, SystemClock

log = structlog.get_logger("threadline.handoff")

NOTICE_AUTHOR = Participant(kind="agent", id="handoff", display_name="handoff")
_SUMMARY_TURNS = 8
# The team's desk hears of one person, and of one conversation, at most once in this window.
DESK_WINDOW = timedelta(minutes=30)
_MAX_TOLD = 10_000


@dataclass(frozen=True, slots=True)
class TeamDesk:
    """Where the team is told: a channel of this deployment and a chat id on it."""

    channel: str
    chat: str


class HandoffDesk:
    """Hands conversations to people and keeps the bot quiet there; see the module docstring."""

    def __init__(self, book: HandoffBook, *, pause_hours: float = 24.0,
                 team: frozenset[str] = frozenset(), desk: TeamDesk | None = None,
                 clock: Clock | None = None) -> None:
        self.book = book
        self.pause = timedelta(hours=pause_hours)
        self.team = team
        self.desk = desk
        self.clock = clock or SystemClock()
        self._channels: Mapping[str, Channel] = {}
        self._inbox: TurnInbox | None = None
        self._told: dict[str, datetime] = {}  # who the desk heard of, and when

    def attach(self, channels: Mapping[str, Channel], inbox: TurnInbox) -> None:
        """The channels the team's notice may go out on, and the ledger it goes through."""
        self._channels = channels
        self._inbox = inbox

    async def screen(self, message: StoredMessage) -> StoredMessage | None:
        """None when the bot answers this turn; else the turn marked as said during a handoff
        (recorded, not answered). A human's reply moves the pause on."""
        now = self.clock.now()
        handoff = await self.book.current(message.conversation_id, now)
        if handoff is None:
            return None
        role = self._role(message, handoff)
        if role == "human":
            await self.book.renew(message.conversation_id, now + self.pause)
        log.info("handoff.bot_quiet", conversation_id=message.conversation_id, role=role)
        return replace(message, metadata=replace(message.metadata, extra={
            **message.metadata.extra, "handoff": role}))

    def _role(self, message: StoredMessage, handoff: Handoff) -> str:
        if message.participant.kind == "system":
            return "system"  # a schedule's turn: held too, and it moves nothing on
        if message.participant.id == handoff.customer_id:
            return "customer"
        if from_bot(message):
            return "bot"
        if not self.team or identity_of(message) in self.team:
            return "human"
        return "participant"

    async def hand_off(self, asking: StoredMessage, *, channel: str | None,
                       reason: str = "", summary: str = "") -> str:
        """Hand `asking`'s conversation to people and notify the team (once per handoff: asking
        again while it holds tells nobody twice); what to tell the customer. `channel` names
        the channel it was asked on (the link to it is that platform's)."""
        now = self.clock.now()
        customer = asking.participant
        asking = self.scoped(asking, channel)
        new = await self.book.start(Handoff(
            conversation_id=asking.conversation_id, customer_id=customer.id,
            customer_name=customer.display_name, reason=reason, started_at=now,
            until=now + self.pause))
        hours = self.pause.total_seconds() / 3600
        log.info("handoff.started", conversation_id=asking.conversation_id, new=new,
                 customer=customer.id)
        if not new:
            return ("This conversation is already with the team; a person will answer here "
                    "(the bot stays quiet until someone sends /bot on).")
        notified = await self._notify(asking, channel, reason=reason, summary=summary)
        quiet = (f"the bot stays quiet in this conversation until someone sends /bot on (or "
                 f"{hours:g} hours after the last human reply)")
        if notified:
            return f"A person will answer here; {quiet}. The team has been told."
        # Nobody was told (no handoff.notify, or it failed): promise no one.
        return (f"OK, {quiet}. Nobody was notified, so a person answers only if one is "
                "reading this conversation.")

    def scoped(self, asking: StoredMessage, channel_name: str | None) -> StoredMessage:
        """What one person may hand over: the conversation their reply lives in. Where the
        platform answers a channel post in its own thread (Slack), that thread, so one member
        cannot quiet the bot for everyone in the channel."""
        channel = self._channels.get(channel_name or "")
        if channel is None:
            return asking
        home = channel.reply_conversation_id(asking)
        if home == asking.conversation_id:
            return asking
        return replace(asking, conversation_id=home, scope="thread", metadata=replace(
            asking.metadata, thread_id=asking.metadata.message_id))

    def _told_lately(self, asking: StoredMessage) -> bool:
        """Whether the team heard of this person, or of this conversation, within
        `DESK_WINDOW` (noted now if not): one member's /human in many threads is one notice."""
        now = self.clock.now()
        keys = (f"person:{asking.participant.id}", f"conversation:{asking.conversation_id}")
        if any(now - self._told.get(key, now - DESK_WINDOW) < DESK_WINDOW for key in keys):
            return True
        for key in keys:
            self._told[key] = now
        while len(self._told) > _MAX_TOLD:
            self._told.pop(next(iter(self._told)))
        return False

    async def give_back(self, conversation_id: str) -> bool:
        """The bot answers this conversation again; False when it was not handed over."""
        ended = await self.book.end(conversation_id, self.clock.now())
        log.info("handoff.ended", conversation_id=conversation_id, ended=ended)
        return ended

    async def _notify(self, asking: StoredMessage, channel_name: str | None, *, reason: str,
                      summary: str) -> bool:
        desk = self.desk
        if desk is None or self._inbox is None:
            return False
        if self._told_lately(asking):
            log.info("handoff.desk_told_lately", conversation_id=asking.conversation_id,
                     customer=asking.participant.id, window_minutes=DESK_WINDOW.seconds // 60)
            return True
        team_channel = self._channels.get(desk.channel)
        if team_channel is None:
            log.error("handoff.no_team_channel", conversation_id=asking.conversation_id,
                      channel=desk.channel, detail="handoff.notify.channel names no channel "
                      "of this deployment; the team was not told")
            return False
        channel = self._channels.get(channel_name or "")
        link = channel.link_to(asking) if channel is not None else None
        text = "\n".join(line for line in (
            f"Handoff: {asking.participant.display_name} asked for a person in "
            f"{asking.conversation_id}" + (f" ({reason})." if reason else "."),
            f"Link: {link}" if link else "",
            "Summary:", summary or await self._recent(asking),
            "Answer there; the bot stays quiet until someone sends /bot on.") if line)
        where = StoredMessage(
            id=f"{asking.id}>handoff-desk", conversation_id=asking.conversation_id,
            participant=asking.participant, content="", scope="channel",
            metadata=MessageMetadata(channel_type=team_channel.channel_type,
                                     channel_id=desk.chat))
        notice = StoredMessage(id=f"{asking.id}>handoff", conversation_id=asking.conversation_id,
                               participant=NOTICE_AUTHOR, content=text,
                               metadata=MessageMetadata(channel_type=team_channel.channel_type,
                                                        channel_id=desk.chat))
        ids = await LedgeredReply(inbox=self._inbox, channel=team_channel, inbound=where,
                                  agent_name=NOTICE_AUTHOR.id,
                                  post=team_channel.send_reply).post(notice)
        return bool(ids)

    async def _recent(self, asking: StoredMessage) -> str:
        turns = await self.book.store.get(asking.conversation_id, limit=_SUMMARY_TURNS,
                                          through_sequence=asking.sequence)
        lines = [f"{t.participant.display_name}: {t.content[:300]}" for t in turns
                 if not t.is_command and t.content]
        return "\n".join(lines) or "(nothing said yet)"
