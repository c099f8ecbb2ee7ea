"""Which conversations have a model still writing a reply in this process.

An interceptor around each agent turn's model work (its prompt, model calls and tools; the
reply is posted after it returns): the `bursts` stage stops an answer only while its model is
still writing, never once the reply is being posted, so a reply is either whole or stopped.
asyncio runs one step at a time: a turn seen writing here is suspended inside that work, and
a cancellation sent now lands there.
"""

from __future__ import annotations

from collections import Counter

from threadline.interceptors.base import CallNext
from threadline.turn import AgentResult, TurnContext


class ReplyWriting:
    """An interceptor that marks its conversation as being written for while it runs."""

    def __init__(self) -> None:
        self._writing: Counter[str] = Counter()

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        self._writing[context.conversation_id] += 1
        try:
            return await call_next()
        finally:
            self._writing[context.conversation_id] -= 1
            if self._writing[context.conversation_id] <= 0:
                del self._writing[context.conversation_id]

    def writing(self, conversation_id: str) -> bool:
        """Whether a model is writing a reply in the conversation right now."""
        return self._writing[conversation_id] > 0
