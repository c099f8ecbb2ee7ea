"""Posting one agent's reply once, while it is written: the reply ledger around a live reply.

The ledger rule (see `history.inbox`): a reply is claimed (`delivering`) before anything of it
reaches the platform and recorded `delivered`, with every platform id it occupies, after (in
the pipeline, in the one write that also stores the reply: `threadline.after_delivery`). A
streamed reply is claimed at its first visible text, marked as streaming, and the claim takes
the final text just before the platform is asked to show it whole. So a turn taken again after
a crash tells the two apart: a claim still marked as streaming means the process died while
the model was still writing (people saw part of an answer, never the whole): the turn is
answered again and the reply posted anew. A claim holding the final text means it died while
finishing: that reply is not posted again (see `TurnPipeline._earlier_reply`).

The status (typing, Slack's assistant status) is shown from the start of the turn and cleared on
every path: the reply posted, nothing to say, or the turn failing. A turn that fails after part
of its reply was shown ends that reply with the apology, so nobody is left reading half an
answer as if it were the whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

import structlog

from threadline.after_delivery import AfterDelivery, Delivered
from threadline.channels.base import Channel, LiveReply, Post, PostedOnce
from threadline.errors import ChannelError, InvalidMessageError, StoreError
from threadline.history.files import files_of
from threadline.history.inbox import Delivery, DeliveryState, TurnInbox
from threadline.history.model import StoredMessage
from threadline.interceptors.error_reply import TEMPLATE, reason_for
from threadline.turn import AgentResult, Deliver

log = structlog.get_logger("threadline.reply_delivery")

STREAMING = "streaming"  # `metadata.extra["delivery"]` of a claim made while the text grows


def with_platform_ids(message: StoredMessage, ids: Sequence[str]) -> StoredMessage:
    """The turn as posted: the first part's platform id, and every part's when it was split.

    The stored reply carries them, so a later reply to it reaches the agent that wrote it."""
    extra = {**message.metadata.extra, "part_ids": list(ids)} if len(ids) > 1 else (
        message.metadata.extra)
    return replace(message, metadata=replace(message.metadata, message_id=ids[0], extra=extra))


async def post_result(deliver: Deliver, result: AgentResult) -> AgentResult:
    """`result` as posted through `deliver`, its platform ids noted; a result with nothing to
    say abandons the reply (the status is cleared, any text shown ends with an apology)."""
    if result.outbound is None or not result.output:
        await deliver.abandon(None)
        return result
    ids = await deliver.post(result.outbound)
    if not ids:
        return result
    return replace(result, delivered_ids=tuple(ids),
                   outbound=with_platform_ids(result.outbound, ids))


def streaming_claim(outbound: StoredMessage) -> StoredMessage:
    """The ledger claim for a reply whose first words are being shown."""
    extra = {**outbound.metadata.extra, "delivery": STREAMING}
    return replace(outbound, metadata=replace(outbound.metadata, extra=extra))


def interrupted_stream(earlier: Delivery) -> bool:
    """A claim left by a process that died while its reply was still being written."""
    return (earlier.state is DeliveryState.DELIVERING
            and earlier.reply.metadata.extra.get("delivery") == STREAMING)


class LedgeredReply:
    """The pipeline's `Deliver` for one agent's reply to one inbound turn on one channel.

    `post`, when given, posts the reply whole instead of the channel's live reply. With
    `after_delivery`, the posted reply's `delivered` is left to it, to be written with the
    reply's other writes (`threadline.after_delivery`); an apology is recorded at once.
    """

    def __init__(self, *, inbox: TurnInbox, channel: Channel, inbound: StoredMessage,
                 agent_name: str, post: Post | None = None,
                 after_delivery: AfterDelivery | None = None) -> None:
        self._inbox = inbox
        self._after_delivery = after_delivery
        self._channel = channel
        self._post = post
        self._inbound = inbound
        self._agent_name = agent_name
        self._live: LiveReply | None = None
        self._claim: StoredMessage | None = None
        self._ledger = True  # False when the ledger could not be reached: post anyway
        self._earlier_ids: list[str] | None = None  # another attempt claimed this reply
        self._shown: StoredMessage | None = None  # the reply as last shown
        self._log = log.bind(conversation_id=inbound.conversation_id, agent=agent_name,
                             channel=channel.name)

    def _reply(self) -> LiveReply:
        if self._live is None:
            self._live = (
                PostedOnce(self._post, self._inbound, self._agent_name) if self._post
                else self._channel.open_reply(self._inbound, agent_name=self._agent_name))
        return self._live

    async def working(self, activity: str | None = None) -> None:
        if self._earlier_ids is not None:
            return
        try:
            await self._reply().working(activity)
        except (ChannelError, InvalidMessageError) as exc:  # a status is worth no turn
            self._log.warning("delivery.status_failed", error=str(exc))

    async def show(self, outbound: StoredMessage) -> None:
        if self._post is not None or not self._channel.streaming or not outbound.content:
            return  # a reply posted whole is never shown while it is written
        if await self._claimed(streaming_claim(outbound)):
            try:
                self._reply().show(outbound.content)
            except (ChannelError, InvalidMessageError) as exc:
                self._log.warning("delivery.stream_failed", error=str(exc),
                                  outcome="the reply is posted whole when it is finished")
                return
            self._shown = outbound

    async def post(self, outbound: StoredMessage) -> list[str]:
        if not await self._claimed(outbound):
            await self._close()
            return list(self._earlier_ids or ())
        return await self._finish(outbound, self._after_delivery)

    async def abandon(self, error: BaseException | None) -> None:
        if self._shown is None:
            await self._close()
            return
        reason = reason_for(error) if isinstance(error, Exception) else "the reply was stopped"
        # A reply stopped on purpose says why, as whoever stopped it put it (`bursts`).
        said = (str(error.args[0]) if isinstance(error, asyncio.CancelledError) and error.args
                else TEMPLATE.format(reason=reason))
        apology = replace(self._shown, content=said,
                          metadata=replace(self._shown.metadata, mentions=()))
        self._log.warning("delivery.reply_abandoned", reply_id=apology.id, error=repr(error),
                          outcome="what was shown is replaced by the apology")
        await self._finish(apology, None)

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
        if earlier is not None and interrupted_stream(earlier):
            # Only part of an answer was shown before the process died: this one takes over.
            self._log.warning("delivery.interrupted_stream_taken_over", reply_id=outbound.id)
            try:
                await self._inbox.update_delivery(outbound)
            except StoreError as exc:
                self._log.warning("pipeline.ledger_unavailable", error=str(exc))
                self._ledger = False
        elif earlier is not None:
            self._log.warning("pipeline.reply_not_reposted", reply_id=outbound.id,
                              state=earlier.state.value)
            self._earlier_ids = list(earlier.platform_ids)
            return False
        self._claim = outbound
        return True

    async def _finish(self, outbound: StoredMessage, after: AfterDelivery | None) -> list[str]:
        bound = self._log.bind(reply_id=outbound.id)
        if self._claim != outbound and self._ledger:
            try:  # the claim takes the final text before the platform shows it whole
                await self._inbox.update_delivery(outbound)
            except StoreError as exc:
                bound.warning("pipeline.ledger_unavailable", error=str(exc))
        ids: list[str] = []
        try:
            ids = await self._reply().finish(outbound.content)
            made = [f for f in files_of(outbound.metadata.extra) if f.kept]
            if made and ids:  # within the claim: a retried turn never uploads them again
                ids += await self._channel.send_files(self._inbound, made)
        except ChannelError as exc:
            bound.error("pipeline.delivery_failed", error=str(exc), error_type=type(exc).__name__)
        finally:
            await self._close()
        if self._ledger and after is not None:
            after.deliver(Delivered(outbound.id, tuple(ids)))
        elif self._ledger:
            try:
                await self._inbox.finish_delivery(outbound.id, ids)
            except StoreError as exc:
                bound.warning("pipeline.ledger_unavailable", error=str(exc))
        return ids

    async def _close(self) -> None:
        if self._live is not None:
            await self._live.close()
