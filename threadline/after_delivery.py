"""What a delivered reply leaves to write, written together: one transaction where the store
can, each write on its own where it cannot.

Once the platform took a reply, four writes follow it:

    delivered     the reply ledger's claim becomes `delivered`, with the platform ids
    the reply     the history's copy, carrying the platform ids
    spend         the agent turn's spend, settled (`threadline.spend`)
    answered      the inbound turn, when nothing follows this reply (`TurnPipeline`)

Apart they cost a commit each (on PostgreSQL each commit waits for the disk). Together they
cost one, and a crash leaves all of them or none: with none, the ledger's claim still says
the process died between posting and recording the reply, which a retried turn logs and
does not repost (`TurnPipeline._earlier_reply`), as before.

A backend whose parts share one database commits them together (`WritesTogether`: the SQL
backend's `SqlWritesTogether`); a write whose part lives elsewhere (a custom inbox, a spend
ledger of its own) is made on its own. The reply goes through capture's writer's rule: while
the outbox holds turns it queues behind them, never ahead; the ledger and the spend still go
together, and the turn is marked answered on its own once the reply is on disk. When the joint
write fails (the store is away), each write is made on its own, in the order above, as before:
the reply reaches the outbox, the ledger and the spend log their failure, and the inbox's
failure is raised (the turn stays open and is taken again). A joint write can also fail after
its commit landed (the connection lost on the way back): every write but the spend's is the
same made twice, the spend's adds, so a failed joint write is first looked for (`_landed`: its
delivered mark, else its reply) and, when found, nothing is written again. The memory backend keeps
everything in the process: its writes are made one after the other without yielding to
another task (none waits on anything), which is all a transaction means there; a crash loses
them all alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from threadline.errors import StoreError
from threadline.history.inbox import DeliveryState, TurnInbox, TurnState
from threadline.history.model import StoredMessage
from threadline.interceptors.capture import DurableWriter
from threadline.turn import Settling

log = structlog.get_logger("threadline.after_delivery")


@dataclass(frozen=True, slots=True)
class Delivered:
    """The ledger entry of a posted reply: its id and the platform ids it went out as."""

    reply_id: str
    platform_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReplyWrites:
    """Writes a delivered reply leaves; None: not among them."""

    delivered: Delivered | None = None
    reply: StoredMessage | None = None
    answered: str | None = None  # the inbound turn's id
    settlement: Settling | None = None

    @property
    def count(self) -> int:
        return sum(w is not None for w in (self.delivered, self.reply, self.answered,
                                           self.settlement))


@dataclass(frozen=True, slots=True)
class Committed:
    """What the joint write found: whether the conversation has other turns open (as
    `TurnInbox.finish` says) and what the settlement's write returned (`Settling.heard`)."""

    others_open: bool = True
    settled: Any = None


class WritesTogether(Protocol):
    """A backend's way to commit a reply's writes in one transaction."""

    def holds(self, part: object) -> bool:
        """Whether `part` (a history, an inbox, a spend ledger) keeps its rows in the
        database this commits to."""
        ...

    async def commit(self, writes: ReplyWrites) -> Committed:
        """Make `writes` in one transaction (its parts are all held here)."""
        ...


class AfterDelivery:
    """Gathers one agent turn's writes until its reply is delivered, then writes them
    (`commit`); see the module docstring.

    The reply ledger notes the delivered reply here (`deliver`), the spend interceptor the
    spend (`owe`, through `TurnContext.after_delivery`).
    """

    def __init__(self, *, inbox: TurnInbox, writer: DurableWriter,
                 together: WritesTogether | None) -> None:
        self._inbox = inbox
        self._writer = writer
        self._together = together
        self._delivered: Delivered | None = None
        self._settlement: Settling | None = None

    def deliver(self, delivered: Delivered) -> None:
        self._delivered = delivered

    def owe(self, settlement: Settling) -> None:
        self._settlement = settlement

    async def commit(self, reply: StoredMessage | None, *, answered: str | None = None
                     ) -> bool | None:
        """Write what was gathered, `reply` to the history and, with `answered`, that inbound
        turn as answered; whether its conversation has other turns open (None: `answered`
        was not given). Raises `StoreError` only when the turn could not be marked answered."""
        writes = ReplyWrites(delivered=self._delivered, reply=reply, answered=answered,
                             settlement=self._settlement)
        self._delivered = self._settlement = None  # written once, whatever happens next
        joint = self._joint(writes)
        if joint.count < 2:  # one write alone costs no more than in a transaction
            joint = ReplyWrites()
        committed: Committed | None = Committed()  # None: landed, its answer lost
        if joint.count and self._together is not None:
            try:
                committed = await self._together.commit(joint)
            except Exception as exc:
                landed = await self._landed(joint)
                log.warning("after_delivery.landed_unanswered" if landed
                            else "after_delivery.apart", conversation_id=(
                                reply.conversation_id if reply is not None else None),
                            error=str(exc))
                if landed:
                    committed = None
                else:  # each write on its own, as it handles its failure
                    joint = ReplyWrites()
        if writes.delivered is not None and joint.delivered is None:
            await self._finish_delivery(writes.delivered)
        if reply is not None and joint.reply is None:
            await self._writer.record(reply)
        if writes.settlement is not None:
            if joint.settlement is None:
                await writes.settlement.settle()
            elif committed is None:
                await writes.settlement.hear_recorded()
            else:
                writes.settlement.heard(committed.settled)
        if answered is None:
            return None
        if joint.answered is None:
            return await self._inbox.finish(answered, TurnState.ANSWERED)
        # Landed unanswered: whether other turns are open is unknown, and saying so makes the
        # pipeline look, as it does after any turn that leaves others open.
        return committed.others_open if committed is not None else True

    def _joint(self, writes: ReplyWrites) -> ReplyWrites:
        """The writes whose parts keep their rows where the backend commits together."""
        together = self._together
        if together is None:
            return ReplyWrites()
        inbox = together.holds(self._inbox)
        settlement = writes.settlement
        reply = (writes.reply if together.holds(self._writer.store)
                 and self._writer.takes_now() else None)
        return ReplyWrites(
            delivered=writes.delivered if inbox else None,
            reply=reply,
            # A reply written apart (behind the outbox's turns) is written before its turn
            # is marked answered, which then follows on its own.
            answered=writes.answered if inbox and reply is writes.reply else None,
            settlement=(settlement if settlement is not None
                        and together.holds(settlement.ledger) else None))

    async def _landed(self, joint: ReplyWrites) -> bool:
        """Whether a joint write that raised was committed all the same: its writes land
        together or not at all, so its delivered mark (else its reply) tells. False when that
        cannot be read either (the store is away: the writes apart then fail alike)."""
        try:
            if joint.delivered is not None:
                entry = await self._inbox.delivery(joint.delivered.reply_id)
                return entry is not None and entry.state is DeliveryState.DELIVERED
            if joint.reply is not None:
                return bool(await self._writer.store.get_by_ids(joint.reply.conversation_id,
                                                                [joint.reply.id]))
        except Exception as exc:
            log.warning("after_delivery.unknown", error=str(exc))
        return False

    async def _finish_delivery(self, delivered: Delivered) -> None:
        try:
            await self._inbox.finish_delivery(delivered.reply_id, delivered.platform_ids)
        except StoreError as exc:  # the reply matters more than the ledger (`reply_delivery`)
            log.warning("pipeline.ledger_unavailable", reply_id=delivered.reply_id,
                        error=str(exc))
