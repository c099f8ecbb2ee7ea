"""Posting one agent's reply once, while it is written: the reply ledger around a live reply.

The ledger rule (see `history.inbox`): a reply is claimed (`delivering`) before anything of it
reaches the platform and recorded `delivered`, with every platform id it occupies and its final
text, after. A streamed reply is claimed at its first visible text, so a turn taken again after
a crash mid-stream finds the claim and does not post again; once finished, the ledger holds the
final text, never the part that was showing when the claim was made.

The status (typing, Slack's assistant status) is shown from the start of the turn and cleared on
every path: the reply posted, nothing to say, or the turn failing. A turn that fails after part
of its reply was shown ends that reply with the apology, so nobody is left reading half an
answer as if it were the whole.
"""

from __future__ import annotations

from dataclasses import replace

import structlog

from threadline.channels.base import Channel, LiveReply
from threadline.errors import ChannelError, InvalidMessageError, StoreError
from threadline.history.inbox import TurnInbox
from threadline.history.model import StoredMessage
from threadline.interceptors.error_reply import TEMPLATE, reason_for

log = structlog.get_logger("threadline.reply_delivery")


class LedgeredReply:
    """The pipeline's `Deliver` for one agent's reply to one inbound turn on one channel."""

    def __init__(self, *, inbox: TurnInbox, channel: Channel, inbound: StoredMessage,
                 agent_name: str) -> None:
        self._inbox = inbox
        self._channel = channel
        self._inbound = inbound
        self._agent_name = agent_name
        self._live: LiveReply | None = None
        self._claim: StoredMessage | None = None
        self._ledger = True  # False when the ledger could not be reached: post anyway
        self._earlier_ids: list[str] | None = None  # another attempt claimed this reply
        self._shown = False
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name,
                             channel=channel.name)

    def _reply(self) -> LiveReply:
        if self._live is None:
            self._live = self._channel.open_reply(self._inbound, agent_name=self._agent_name)
        return self._live

    async def working(self, activity: str | None = None) -> None:
        if self._earlier_ids is not None:
            return
        try:
            await self._reply().working(activity)
        except (ChannelError, InvalidMessageError) as exc:  # a status is worth no turn
            self._log.warning("delivery.status_failed", error=str(exc))

    async def show(self, outbound: StoredMessage) -> None:
        if not self._channel.streaming or not outbound.content:
            return
        if await self._claimed(outbound):
            try:
                self._reply().show(outbound.content)
            except (ChannelError, InvalidMessageError) as exc:
                self._log.warning("delivery.stream_failed", error=str(exc),
                                  outcome="the reply is posted whole when it is finished")
                return
            self._shown = True

    async def post(self, outbound: StoredMessage) -> list[str]:
        if not await self._claimed(outbound):
            await self._close()
            return list(self._earlier_ids or ())
        return await self._finish(outbound)

    async def abandon(self, error: BaseException | None) -> None:
        if not self._shown or self._claim is None:
            await self._close()
            return
        reason = reason_for(error) if isinstance(error, Exception) else "the reply was stopped"
        apology = replace(self._claim, content=TEMPLATE.format(reason=reason),
                          metadata=replace(self._claim.metadata, mentions=()))
        self._log.warning("delivery.reply_abandoned", reply_id=apology.id, error=repr(error),
                          outcome="what was shown is replaced by the apology")
        await self._finish(apology)

    async def _claimed(self, outbound: StoredMessage) -> bool:
        """Whether this attempt may post the reply (it claimed it now or earlier)."""
        if self._claim is not None:
            return True
        if self._earlier_ids is not None:
            return False
        try:
            earlier = await self._inbox.start_delivery(outbound)
        except StoreError as exc:
            # The reply matters more than the ledger: post it, and say so.
            self._log.warning("pipeline.ledger_unavailable", error=str(exc))
            earlier, self._ledger = None, False
        if earlier is not None:
            self._log.warning("pipeline.reply_not_reposted", reply_id=outbound.id,
                              state=earlier.state.value)
            self._earlier_ids = list(earlier.platform_ids)
            return False
        self._claim = outbound
        return True

    async def _finish(self, outbound: StoredMessage) -> list[str]:
        bound = self._log.bind(reply_id=outbound.id)
        try:
            ids = await self._reply().finish(outbound.content)
        except ChannelError as exc:
            bound.error("pipeline.delivery_failed", error=str(exc), error_type=type(exc).__name__)
            ids = []
        finally:
            await self._close()
        if self._ledger:
            try:
                await self._inbox.finish_delivery(outbound.id, ids, reply=outbound)
            except StoreError as exc:
                bound.warning("pipeline.ledger_unavailable", error=str(exc))
        return ids

    async def _close(self) -> None:
        if self._live is not None:
            await self._live.close()
