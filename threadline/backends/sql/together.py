"""A delivered reply's writes in one transaction of the history's database
(`threadline.after_delivery`): the reply appended, its ledger entry delivered, the inbound turn
answered, the agent turn's spend settled.

Each statement is the one its part sends alone (`inbox.record_delivered`, `inbox.finish_turn`,
`spend.settle_rows`, the store's append); here they share a connection and one commit. The
spend rows come last: an agent's row is shared by all its conversations, and is held only
until the commit that follows at once.
"""

from __future__ import annotations

from functools import partial

from threadline.after_delivery import Committed, ReplyWrites
from threadline.backends.sql.inbox import finish_turn, record_delivered
from threadline.backends.sql.operations import SqlRunner
from threadline.backends.sql.spend import SqlSpendLedger, settle_rows
from threadline.backends.sql.store import SqlConversationStore
from threadline.history.inbox import TurnState
from threadline.spend.ledger import Settlement


def _beside(conn: SqlRunner, writes: ReplyWrites) -> Committed:
    if writes.delivered is not None:
        record_delivered(conn, writes.delivered.reply_id, writes.delivered.platform_ids)
    others = True
    if writes.answered is not None:
        others = finish_turn(conn, writes.answered, TurnState.ANSWERED.value, None)
    owed = writes.settlement
    if owed is None:
        return Committed(others_open=others)
    if not isinstance(owed, Settlement):  # `holds` took only a SqlSpendLedger's
        raise TypeError(f"cannot settle {type(owed).__name__} in the history's database")
    return Committed(others_open=others, settled=settle_rows(
        conn, owed.day, owed.charges, owed.reserved, owed.spend))


class SqlWritesTogether:
    """`WritesTogether` on one `SqlConversationStore`: its history, its inbox and ledger, and
    a spend ledger kept in it."""

    def __init__(self, store: SqlConversationStore) -> None:
        self.store = store

    def holds(self, part: object) -> bool:
        store = self.store
        return (part is store or part is store.inbox
                or (isinstance(part, SqlSpendLedger) and part.store is store))

    async def commit(self, writes: ReplyWrites) -> Committed:
        # Its commit need not wait for the disk (`operations.durable_later`): the ledger's
        # claim, durable before the reply was posted, covers its loss as it covers a crash
        # before it (the reply is not posted again; the turn is taken again).
        return await self.store.append_with("record a delivered reply", writes.reply,
                                            partial(_beside, writes=writes),
                                            wait_for_disk=False)
