"""The inbox: every inbound turn, durable from the moment a platform is told it was received.

A turn enters as `received` (the platform may be acknowledged once `receive` returned), becomes
`answering` when a worker takes it (each take counts an attempt), and ends `answered`, or
`given_up` with the error after too many attempts. Until it ends, the inbox row is what the
turn says: a person's edit changes it (`edit_open`) and a deletion cancels it (`cancel_open`:
`cancelled`, its text dropped), whether it still waits (for its conversation's earlier turns,
or for a worker) or a worker has taken it. The worker stores the turn in the history, then
reads the row back (`retake`): an edit or deletion that came in since it took the turn is
applied to the stored turn before anything answers it, and one that comes in later finds the
turn in the history. A turn taken or finished may be answered again as edited
(`answer_again`); a worker still answering it finishes its attempt, and the edit waits.

Dedup means "already answered or being answered": a redelivery of a turn the inbox holds, in
any state, or of a turn already in the history, is not new.

Replies have a ledger of their own, keyed by the reply's id (the turn answered and the agent):
a reply is `delivering`, with its text, before it is posted and `delivered`, with its platform
ids, after. A retried turn never posts a reply twice; a `delivering` entry found later means
the process died between posting and recording, which is logged and not reposted blindly (the
reply is kept in the history, marked as possibly not posted). A reply streamed while it is
written is claimed at its first words (marked as streaming) and updated to its final text just
before it is finished: a process that died mid-stream left only part of an answer, and the
turn is answered again (`threadline.reply_delivery`).

A burst (`threadline.bursts`) is several turns of one person answered by one reply: the inbox
keeps when each turn was received and which burst claimed it (`BurstInbox`), so the wait for a
quiet moment is measured on the recorded turns, a process that dies while waiting loses none,
and the process that owns the conversation next finds the same grouping.

`SqlConversationStore` keeps both in its database (shared by every worker process);
`MemoryInbox` serves the in-memory store and custom stores, for one process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol, runtime_checkable

from threadline.history.model import StoredMessage


class TurnState(StrEnum):
    RECEIVED = "received"
    ANSWERING = "answering"
    ANSWERED = "answered"
    GIVEN_UP = "given_up"
    CANCELLED = "cancelled"  # deleted by its author while it waited


OPEN_STATES = (TurnState.RECEIVED, TurnState.ANSWERING)


class DeliveryState(StrEnum):
    DELIVERING = "delivering"
    DELIVERED = "delivered"


@dataclass(frozen=True, slots=True)
class InboxTurn:
    """One inbound turn waiting in (or done with) the inbox; `channel` is where it arrived."""

    message: StoredMessage
    channel: str | None
    state: TurnState = TurnState.RECEIVED
    attempts: int = 0
    error: str | None = None

    @property
    def turn_id(self) -> str:
        return self.message.id

    @property
    def conversation_id(self) -> str:
        return self.message.conversation_id


@dataclass(frozen=True, slots=True)
class Delivery:
    """One reply's ledger entry: its state, the reply, and the platform ids it went out as."""

    reply: StoredMessage
    state: DeliveryState
    platform_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TimedTurn:
    """An open turn with when it was received (seconds since the epoch) and the burst that
    claimed it (its first turn's id; None: not claimed)."""

    turn: InboxTurn
    received_at: float
    burst: str | None


@runtime_checkable
class BurstInbox(Protocol):
    """What an inbox keeps for bursts; see the module docstring."""

    async def open_turns_timed(self, conversation_id: str) -> list[TimedTurn]:
        """The conversation's open turns, oldest first, with their times and bursts."""
        ...

    async def claim_burst(self, burst: str, turn_ids: Sequence[str]) -> list[str]:
        """Claim open, unclaimed turns for `burst`; the ids claimed now, in the order given."""
        ...


@runtime_checkable
class TurnInbox(Protocol):
    """Durable inbound turns and the reply ledger; see the module docstring."""

    async def receive(self, message: StoredMessage, *, channel: str | None) -> bool:
        """Record a turn as to be answered; False if the inbox or the history already has it."""
        ...

    async def open_turns(self, conversation_id: str) -> list[InboxTurn]:
        """The conversation's turns still to answer (received or answering), oldest first."""
        ...

    async def conversations_waiting(self, *, limit: int = 100) -> list[str]:
        """Conversations with turns still to answer, the longest waiting first."""
        ...

    async def take_next(self, conversation_id: str) -> InboxTurn | None:
        """The conversation's oldest open turn, now marked as being answered, with this
        attempt counted (`attempts` is 1 for the first); None when none is open. One step, so
        its owner reads nothing else to go from one turn to the next."""
        ...

    async def retake(self, turn_id: str) -> StoredMessage | None:
        """The turn being answered as it stands now (with any edit made since it was taken),
        still being answered; None when it was deleted meanwhile. Called once the history
        holds the turn: an edit from then on finds it there."""
        ...

    async def finish(self, turn_id: str, state: TurnState, *, error: str | None = None) -> bool:
        """Mark a turn being answered answered, given up (with the error that made it so) or
        received (to take again). A turn no longer being answered (deleted, or reopened by
        `answer_again` meanwhile) is left as it is.

        False only when the turn was finished and no other turn of its conversation is open
        (its owner need not read them again); True when others are, or it was left as it is."""
        ...

    async def edit_open(self, turn_id: str, content: str) -> TurnState | None:
        """An open turn now reads `content`; its state (received: nobody has taken it yet),
        or None when the inbox holds no open turn of that id."""
        ...

    async def cancel_open(self, turn_id: str) -> TurnState | None:
        """An open turn is not answered (`cancelled`, its text dropped); the state it was in,
        or None when none is open. A worker that took it drops it when it reads it back
        (`retake`)."""
        ...

    async def answer_again(self, message: StoredMessage) -> bool:
        """A turn taken or finished is to be answered again as `message` (its edit; same id):
        waiting once more, attempts from zero. False when the inbox holds no such turn (or it
        still waits, and will be answered as it reads)."""
        ...

    async def start_delivery(self, reply: StoredMessage) -> Delivery | None:
        """Claim a reply for posting: None if claimed now, else the entry already there."""
        ...

    async def update_delivery(self, reply: StoredMessage) -> None:
        """Replace a claimed, not yet delivered reply with `reply` (same id): a streamed reply
        is claimed with its first words, and holds its final text before it is finished."""
        ...

    async def finish_delivery(self, reply_id: str, platform_ids: Sequence[str]) -> None:
        """Record that the claimed reply was posted, as these platform ids."""
        ...

    async def delivery(self, reply_id: str) -> Delivery | None:
        """The ledger entry of a reply, if any."""
        ...


class MemoryInbox:
    """A `TurnInbox` in this process's memory: for the in-memory store and custom stores.

    It outlives nothing: a turn in flight when the process dies is lost with the process, as the
    in-memory history is. Finished turns beyond `remember` are forgotten, oldest first.
    """

    def __init__(self, *, remember: int = 10_000) -> None:
        self._remember = remember
        self._turns: dict[str, InboxTurn] = {}
        self._deliveries: dict[str, Delivery] = {}
        self._received_at: dict[str, float] = {}
        self._bursts: dict[str, str] = {}

    async def receive(self, message: StoredMessage, *, channel: str | None) -> bool:
        if message.id in self._turns:
            return False
        self._turns[message.id] = InboxTurn(message=message, channel=channel)
        self._received_at[message.id] = time.time()
        return True

    async def open_turns_timed(self, conversation_id: str) -> list[TimedTurn]:
        return [TimedTurn(turn=t, received_at=self._received_at.get(t.turn_id, 0.0),
                          burst=self._bursts.get(t.turn_id))
                for t in await self.open_turns(conversation_id)]

    async def claim_burst(self, burst: str, turn_ids: Sequence[str]) -> list[str]:
        claimed = [i for i in turn_ids if self._open(i) is not None and i not in self._bursts]
        self._bursts.update(dict.fromkeys(claimed, burst))
        return claimed

    async def open_turns(self, conversation_id: str) -> list[InboxTurn]:
        return [t for t in self._turns.values()
                if t.conversation_id == conversation_id and t.state in OPEN_STATES]

    async def conversations_waiting(self, *, limit: int = 100) -> list[str]:
        waiting = (t.conversation_id for t in self._turns.values() if t.state in OPEN_STATES)
        return list(dict.fromkeys(waiting))[:limit]

    async def take_next(self, conversation_id: str) -> InboxTurn | None:
        turn = next((t for t in self._turns.values()
                     if t.conversation_id == conversation_id and t.state in OPEN_STATES), None)
        if turn is None:
            return None
        taken = replace(turn, state=TurnState.ANSWERING, attempts=turn.attempts + 1)
        self._turns[turn.turn_id] = taken
        return taken

    async def retake(self, turn_id: str) -> StoredMessage | None:
        turn = self._open(turn_id)
        if turn is None:
            return None
        self._turns[turn_id] = replace(turn, state=TurnState.ANSWERING)
        return turn.message

    async def finish(self, turn_id: str, state: TurnState, *, error: str | None = None) -> bool:
        turn = self._turns.get(turn_id)
        if turn is None or turn.state is not TurnState.ANSWERING:
            return True
        self._turns[turn_id] = replace(turn, state=state, error=error)
        finished = [k for k, t in self._turns.items() if t.state not in OPEN_STATES]
        for key in finished[: max(len(finished) - self._remember, 0)]:
            del self._turns[key]
            self._received_at.pop(key, None)
            self._bursts.pop(key, None)
        return any(t.conversation_id == turn.conversation_id and t.state in OPEN_STATES
                   for t in self._turns.values())

    async def edit_open(self, turn_id: str, content: str) -> TurnState | None:
        turn = self._open(turn_id)
        if turn is None:
            return None
        self._turns[turn_id] = replace(turn, message=replace(turn.message, content=content))
        return turn.state

    async def cancel_open(self, turn_id: str) -> TurnState | None:
        turn = self._open(turn_id)
        if turn is None:
            return None
        self._turns[turn_id] = replace(turn, state=TurnState.CANCELLED,
                                       message=replace(turn.message, content=""))
        return turn.state

    async def answer_again(self, message: StoredMessage) -> bool:
        turn = self._turns.get(message.id)
        if turn is None or turn.state is TurnState.RECEIVED:
            return False
        self._turns[message.id] = InboxTurn(message=message, channel=turn.channel)
        return True

    def _open(self, turn_id: str) -> InboxTurn | None:
        turn = self._turns.get(turn_id)
        return turn if turn is not None and turn.state in OPEN_STATES else None

    async def start_delivery(self, reply: StoredMessage) -> Delivery | None:
        existing = self._deliveries.get(reply.id)
        if existing is not None:
            return existing
        self._deliveries[reply.id] = Delivery(reply=reply, state=DeliveryState.DELIVERING)
        while len(self._deliveries) > self._remember:
            del self._deliveries[next(iter(self._deliveries))]
        return None

    async def update_delivery(self, reply: StoredMessage) -> None:
        claimed = self._deliveries.get(reply.id)
        if claimed is not None and claimed.state is DeliveryState.DELIVERING:
            self._deliveries[reply.id] = replace(claimed, reply=reply)

    async def finish_delivery(self, reply_id: str, platform_ids: Sequence[str]) -> None:
        self._deliveries[reply_id] = replace(self._deliveries[reply_id],
                                             state=DeliveryState.DELIVERED,
                                             platform_ids=tuple(platform_ids))

    async def delivery(self, reply_id: str) -> Delivery | None:
        return self._deliveries.get(reply_id)
