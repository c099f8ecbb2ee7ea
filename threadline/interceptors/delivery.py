"""Delivery: the reply is posted on the platform before capture stores it.

Why it exists: people should see the agent working and read its reply as it is written (the
agent shows its text through `context.deliver` as the model writes it), and the stored reply
must carry the platform's message id, so a later reply to it
reaches the agent that wrote it, and delivery is a step of its own (the pipeline's `deliver`
keeps the reply ledger that makes a retried turn never post twice). It sits right inside
capture, outside the agent's own interceptors, so a friendly error reply is delivered too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from threadline.history.model import StoredMessage
from threadline.interceptors.base import CallNext
from threadline.turn import AgentResult, TurnContext


class DeliveryInterceptor:
    """Shows the agent working, posts `result.outbound` through `context.deliver` and notes the
    platform ids it got; a turn that fails or has nothing to say abandons the reply (the
    status is cleared and any text shown is ended with an apology)."""

    async def __call__(self, context: TurnContext, call_next: CallNext) -> AgentResult:
        deliver = context.deliver
        if deliver is None:
            return await call_next()
        await deliver.working()
        try:
            result = await call_next()
        except BaseException as exc:
            await deliver.abandon(exc)
            raise
        if result.outbound is None or not result.output:
            await deliver.abandon(None)
            return result
        ids = await deliver.post(result.outbound)
        if not ids:
            return result
        return replace(result, delivered_ids=tuple(ids),
                       outbound=with_platform_ids(result.outbound, ids))


def with_platform_ids(message: StoredMessage, ids: Sequence[str]) -> StoredMessage:
    """The turn as posted: the first part's platform id, and every part's when it was split."""
    extra = {**message.metadata.extra, "part_ids": list(ids)} if len(ids) > 1 else (
        message.metadata.extra)
    return replace(message, metadata=replace(message.metadata, message_id=ids[0], extra=extra))
