"""Replies on their way to web visitors: what each conversation's open streams hear while an
agent writes, before the reply is a stored turn.

A web visitor's transcript is the conversation's history: every finished reply reaches the
browser as the stored turn (the history's change notifications), and a stream that reconnects
reads the turns it missed from the history. What the history cannot say is a reply still being
written; `ReplyBoard` keeps that, per conversation, as whole values keyed by the reply's stable
id (`threadline.turn.reply_turn_id`): the status (typing, a tool), the text so far, and the text
as posted. A stream that joins late is given the current value, never a backlog of pieces, and
the browser replaces the reply with the same id: a reply shown twice, or half, cannot happen,
and the stored turn with that id ends it. A value is dropped once its turn is stored (or after
`LINGER_SECONDS`, if storing it failed).

Values live in this process: a visitor streamed by another replica of a shared PostgreSQL store
sees the reply when it is stored, not word by word.

The board also keeps the feedback buttons offered under each conversation's recent replies
(`FeedbackOffer`, the last `OFFERS_KEPT`), so a stream that joins later shows them too. They
live in this process as well: after a restart, older replies show no buttons (the
`/feedback` command still rates them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from threadline.channels.base import LiveReply
from threadline.channels.live import RateGate, TextPacer
from threadline.commands import CommandChoice
from threadline.history.changes import HistoryChange
from threadline.history.model import StoredMessage
from threadline.turn import reply_turn_id

LINGER_SECONDS = 600.0
OFFERS_KEPT = 100  # per conversation
ReplyState = Literal["status", "draft", "posted", "closed"]


@dataclass(frozen=True, slots=True)
class ReplyEvent:
    """One change of a reply being written, as a stream sends it (`kind` is the SSE event)."""

    kind: ReplyState
    reply_id: str
    agent: str
    text: str = ""
    activity: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.reply_id, "agent": self.agent, "text": self.text,
                "activity": self.activity}


@dataclass(frozen=True, slots=True)
class FeedbackOffer:
    """The 👍 and 👎 under one stored reply (`reply_id`, the turn's id): each a label and the
    command its press sends as the visitor (`Channel.offer_feedback`); a `feedback` event."""

    reply_id: str
    choices: tuple[CommandChoice, ...]

    def as_json(self) -> dict[str, Any]:
        return {"id": self.reply_id,
                "choices": [{"label": c.label, "command": c.command} for c in self.choices]}


# What a stream's queue carries: a reply's change, an offer of feedback buttons, a stored
# turn's change, or None (stop).
StreamItem = ReplyEvent | FeedbackOffer | HistoryChange | None


class ReplyBoard:
    """The replies being written in each web conversation, and the streams listening there."""

    def __init__(self) -> None:
        self._current: dict[str, dict[str, tuple[ReplyEvent, float]]] = {}
        self._streams: dict[str, set[asyncio.Queue[StreamItem]]] = {}
        self._offers: dict[str, dict[str, FeedbackOffer]] = {}

    def listen(self, conversation_id: str) -> asyncio.Queue[StreamItem]:
        queue: asyncio.Queue[StreamItem] = asyncio.Queue()
        self._streams.setdefault(conversation_id, set()).add(queue)
        return queue

    def leave(self, conversation_id: str, queue: asyncio.Queue[StreamItem]) -> None:
        streams = self._streams.get(conversation_id)
        if streams is not None:
            streams.discard(queue)
            if not streams:
                del self._streams[conversation_id]

    def close_all(self) -> None:
        """Every stream ends (the channel stops); browsers reconnect to whoever serves next."""
        for streams in self._streams.values():
            for queue in streams:
                queue.put_nowait(None)

    def current(self, conversation_id: str) -> Iterator[ReplyEvent]:
        """The replies being written there now, as a stream that joins is first told them."""
        now = time.monotonic()
        replies = self._current.get(conversation_id, {})
        for reply_id, (event, since) in list(replies.items()):
            if now - since > LINGER_SECONDS:
                del replies[reply_id]
            else:
                yield event

    def publish(self, conversation_id: str, event: ReplyEvent) -> None:
        replies = self._current.setdefault(conversation_id, {})
        if event.kind == "closed":
            replies.pop(event.reply_id, None)
        else:
            replies[event.reply_id] = (event, time.monotonic())
        if not replies:
            self._current.pop(conversation_id, None)
        for queue in self._streams.get(conversation_id, ()):
            queue.put_nowait(event)

    def offer(self, conversation_id: str, offer: FeedbackOffer) -> None:
        """Buttons under a reply: kept (the conversation's last `OFFERS_KEPT`), and told to the
        conversation's streams."""
        offers = self._offers.setdefault(conversation_id, {})
        offers.pop(offer.reply_id, None)
        offers[offer.reply_id] = offer
        while len(offers) > OFFERS_KEPT:
            del offers[next(iter(offers))]
        for queue in self._streams.get(conversation_id, ()):
            queue.put_nowait(offer)

    def offers(self, conversation_id: str) -> list[FeedbackOffer]:
        """The buttons offered under the conversation's recent replies, oldest first."""
        return list(self._offers.get(conversation_id, {}).values())

    def heard(self, change: HistoryChange) -> None:
        """A stored change (`ConversationStore.subscribe`): a stored reply ends its value, and
        the conversation's streams are told."""
        replies = self._current.get(change.conversation_id)
        if replies is not None and change.kind == "append":
            for message_id in change.message_ids:
                replies.pop(message_id, None)
            if not replies:
                self._current.pop(change.conversation_id, None)
        for queue in self._streams.get(change.conversation_id, ()):
            queue.put_nowait(change)


class WebLiveReply(LiveReply):
    """One agent's reply to one web turn, on the board while it is written.

    The text so far goes out at most once per `gate` interval per conversation (everything
    written in between is folded into one value, `TextPacer`); `finish` posts the whole text
    at once, before the pipeline stores it, so the browser never waits on the database.
    """

    def __init__(self, *, board: ReplyBoard, inbound: StoredMessage, agent_name: str | None,
                 gate: RateGate, log: Any) -> None:
        self._board = board
        self._conversation_id = inbound.conversation_id
        self._agent = agent_name or ""
        self.reply_id = reply_turn_id(inbound, self._agent)
        self._pacer = TextPacer(self._push, gate=gate, key=self._conversation_id,
                                log=log.bind(conversation_id=self._conversation_id,
                                             agent=agent_name))

    def _event(self, kind: ReplyState, text: str = "", activity: str | None = None
               ) -> ReplyEvent:
        return ReplyEvent(kind=kind, reply_id=self.reply_id, agent=self._agent, text=text,
                          activity=activity)

    async def working(self, activity: str | None = None) -> None:
        self._board.publish(self._conversation_id, self._event("status", activity=activity))

    def show(self, text: str) -> None:
        self._pacer.offer(text)

    async def _push(self, text: str) -> None:
        self._board.publish(self._conversation_id, self._event("draft", text))

    async def finish(self, text: str) -> list[str]:
        await self._pacer.stop()
        self._board.publish(self._conversation_id, self._event("posted", text))
        return [self.reply_id]

    async def close(self) -> None:
        await self._pacer.stop()
        current = {e.reply_id: e for e in self._board.current(self._conversation_id)}
        if current.get(self.reply_id, self._event("closed")).kind != "posted":
            self._board.publish(self._conversation_id, self._event("closed"))
