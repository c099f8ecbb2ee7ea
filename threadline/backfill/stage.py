"""The `backfill` stage: the first time an agent is addressed in a conversation the history
knows nothing of, what was said there before is read from the platform and stored.

A bot mentioned in a Slack thread it was never in knows nothing before that moment. Here,
before the turn is stored (the pipeline stores it after the stages), the channel is asked for
up to `limit` earlier messages (`Channel.earlier_messages`), and they are stored as ordinary
turns, oldest first, with the ids their events would have: the history then reads in the
order things were said, the agent answers with them in its prompt, and the same messages
arriving later as events are recognized as turns the history holds (the inbox does not take
them again). A platform that gives bots no history (Telegram) says so in the log, once per
conversation, and the turn is answered with what the history has.

"The history knows nothing of it" is asked of the store once per conversation and process
(remembered for `MAX_REMEMBERED` conversations), so a conversation already under way costs no
read per turn.
"""

from __future__ import annotations

from collections import OrderedDict

import structlog

from threadline.errors import ChannelError
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.stages import Next, Turn
from threadline.turn import AgentResult

log = structlog.get_logger("threadline.backfill")

MAX_REMEMBERED = 50_000


async def backfill(store: ConversationStore, message: StoredMessage,
                   earlier: list[StoredMessage]) -> int:
    """Store `earlier` (messages said before `message`) as turns, in one transaction; how
    many were new to the history."""
    earlier = [m for m in earlier if m.id != message.id]
    return sum(await store.append_many(earlier)) if earlier else 0


class BackfillStage:
    """See the module docstring."""

    acts_after_answer = False  # its turns pass on to the answer and come back as they are

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self._seen: OrderedDict[str, None] = OrderedDict()

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        channel = turn.attachment.channel
        conversation_id = turn.message.conversation_id
        if (channel is None or not turn.routes or turn.command is not None
                or turn.scheduled is not None or conversation_id in self._seen):
            return await call_next(turn)
        if await turn.actions.store.count(conversation_id) == 0:
            try:
                earlier = await channel.earlier_messages(turn.message, limit=self.limit)
            except ChannelError as exc:
                turn.log.warning("backfill.unavailable", channel=channel.name, error=str(exc),
                                 outcome="answered with what the history holds")
            else:
                stored = await backfill(turn.actions.store, turn.message, earlier)
                turn.log.info("backfill.stored", channel=channel.name, read=len(earlier),
                              stored=stored)
        self._remember(conversation_id)  # not after a store error: the retry reads again
        return await call_next(turn)

    def _remember(self, conversation_id: str) -> None:
        self._seen[conversation_id] = None
        while len(self._seen) > MAX_REMEMBERED:
            self._seen.popitem(last=False)
