"""The turn pipeline: one owner for every inbound turn, from the platform event to the reply.

    receive          the channel hands over a normalized turn; a turn the inbox or the history
                     already holds is not new (a platform redelivery)
    record           the turn is durable in the inbox as "to answer"; only now may the channel
                     acknowledge the platform (`receive` returned), so a crash loses nothing;
                     an edit or a deletion of it changes it there until the history holds it
                     (`threadline.turn_edits`), the stored turn from then on
    own              one process at a time owns a conversation and takes its open turns in
                     arrival order (`threadline.owners`); a process that dies releases it,
                     and whoever owns it next answers what was left
    stages           every kind of turn walks the declared stages (`threadline.stages`):
                     access lists, rate limits, commands, handoff, schedules; a stage may
                     claim the turn (a command is answered by its handler, never by a model)
    store            the turn taken is stored in the history, then read back from the inbox
                     (`record`): an edit or deletion that came in since it was taken
                     is applied to the stored turn before anything answers it
    route            who answers, and why (`threadline.routing`), decided once
    answer           each addressed agent runs its turn inside the pipeline's reply step
                     (the status shown while its own interceptors and the model run)
    deliver, record  every reply, a model's or a command's, takes one path
                     (`_deliver_and_record`): claimed in the reply ledger, posted, then
                     recorded as delivered with its platform ids and stored through
                     capture's durable writer (the one place turns are written), with the
                     agent turn's spend, in one write (`threadline.after_delivery`)
    hand off         a reply that names other agents is answered by them, within the budget of
                     `max_agent_turns` per inbound turn and `max_hops` in depth
    finish           the inbound turn is marked answered (or given up after `max_attempts`);
                     with its last reply's write when nothing follows that reply; one
                     deleted meanwhile stays cancelled, one edited to be answered again
                     waits once more

With tracing on (`threadline.tracing`), each attempt at a turn is one trace: its span holds
the routing decision, each agent's answer and each delivery.

What a plain turn writes (one person, one agent), each write where it must be:

    1 inbox: recorded     before `receive` returns, so the platform is acknowledged only for
                          a durable turn; one statement, which also finds a redelivery of a
                          turn the history already holds
    2 inbox: taken        before anything runs, counting the attempt, so a turn that kills
                          its process every time is given up after `max_attempts`; the same
                          statement picks the conversation's oldest open turn (no read first)
    3 history: the turn   in answering order; its conversation row reserves the sequence in
                          the same statement on PostgreSQL, sent alone (same transaction on
                          SQLite), and the insert itself sends the change notification
    4 inbox: read back    after 3, a read in its own statement, so an edit or a deletion
                          racing the worker lands in the row (read here) or in the history
                          (from 3 on); a write only when an edit reopened the turn meanwhile
    5 ledger: claimed     before the reply is posted: a retried turn never posts it twice
    6 after delivery, one transaction (`threadline.after_delivery`):
      ledger: delivered   with its platform ids: a retry reuses the reply instead of asking
                          the model again
      history: the reply  carrying the platform ids (a reply to it reaches its agent)
      inbox: answered     only with the turn's last reply, when nothing follows it: the reply
                          hands the turn to nobody and no stage acts after the answer
                          (`stages.answer_ends_walk`); otherwise a write of its own once the
                          turn's every reply and hand-off is done (8). The same statement
                          says whether the conversation has other turns open, so its owner
                          does not read them once more to find none
      spend: settled      the agent turn's tokens (with a spend ledger), last: its agent row
                          is shared by every conversation and is held only until the commit
                          (with daily caps, a reservation made before the model is asked
                          is a write of its own: it must refuse before the model runs)
    7 reply record        the inspector's, written in the background, many turns a
                          transaction: it is built (rendered, redacted) off the turn's path
                          and is diagnostics, which a crash may lose, never a turn
    8 inbox: answered     when 6 could not take it (a hand-off, a stage acting after)

6 is all or nothing: a crash before its commit leaves the claim of 5 as it was, which says the
process died between posting and recording the reply, as a crash right after posting always
did. 5 cannot join 6 (it must be durable before the platform is asked), nor 1 to 4 one
another (each must be committed before what follows it may happen). On PostgreSQL 2, 6 and 7
commit without waiting for the disk (`backends.sql.operations.durable_later`): 1, 3 and 5,
which wait, cover them (what a crash of the database server itself could take of them is
what a crash of our process just before them leaves, redone the same way), and nobody
outside is told anything on the strength of them. While the store is away, 6 is written
apart, each write as it handles its failure: the reply waits in capture's outbox, the ledger
and the spend log theirs, and the inbox's keeps the turn open to be taken again.

Reads: the prompt (history and summary at once, recall in one statement: beside them on
PostgreSQL, after them on SQLite, and only when the prompt leaves a turn to recall), and on
PostgreSQL `pg_try_advisory_lock` when the conversation is not still held from its last turns
(`threadline.backends.sql.locks`: held a moment past them).

A turn answered again after a crash does not post twice: the reply ledger says what was already
delivered (its stored reply is reused) or that the process died between posting and recording
it (logged, not reposted blindly); a reply the process was still streaming when it died was
never whole, and the turn is answered again (`reply_delivery`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import structlog

from threadline.after_delivery import AfterDelivery, WritesTogether
from threadline.agents.agent import Agent
from threadline.agents.approvals import ApprovalGate
from threadline.channels.base import Channel, Post, thread_opening
from threadline.channels.files import read_files
from threadline.commands import CommandRegistry, CommandReply
from threadline.errors import StoreError, TurnNotRecordedError
from threadline.history.addressing import route
from threadline.history.inbox import Delivery, DeliveryState, InboxTurn, TurnInbox, TurnState
from threadline.history.model import StoredMessage
from threadline.interceptors.base import CallNext, Interceptor
from threadline.interceptors.capture import DurableWriter
from threadline.interceptors.outbox import Outbox
from threadline.locks import ConversationLock
from threadline.owners import ConversationOwners
from threadline.people.link_codes import seal_link_codes
from threadline.reply_delivery import (
    LedgeredReply,
    interrupted_stream,
    post_result,
    with_platform_ids,
)
from threadline.routing import Routing
from threadline.schedules.turns import ScheduledTurn
from threadline.stages import Attachment, Stage, Turn, answer_ends_walk, walk
from threadline.tracing import spans as tracing
from threadline.turn import AgentResult, Deliver, TurnContext, reply_turn_id
from threadline.turn_edits import TurnEdits

log = structlog.get_logger("threadline.pipeline")


class TurnPipeline:
    """Receives, records, routes, answers and delivers turns; see the module docstring."""

    def __init__(
        self,
        *,
        agents: dict[str, Agent],
        inbox: TurnInbox,
        writer: DurableWriter,
        lock: ConversationLock,
        default: Attachment,
        max_hops: int = 3,
        max_agent_turns: int = 4,
        max_attempts: int = 3,
        answer_bots: bool = False,
        scan_interval: float = 1.0,
        commands: CommandRegistry | None = None,
        answer_edits: bool = False,
        stages: Sequence[Stage] = (),
        approvals: ApprovalGate | None = None,
        together: WritesTogether | None = None,
    ) -> None:
        self.agents: Mapping[str, Agent] = agents
        self.commands = commands or CommandRegistry()
        self.inbox = inbox
        self.writer = writer
        self.store = writer.store
        self.max_hops = max_hops
        self.max_agent_turns = max_agent_turns
        self.max_attempts = max_attempts
        self.routing = Routing(store=self.store, commands=self.commands, default=default,
                               answer_bots=answer_bots)
        self.attachments = self.routing.attachments  # each channel's, by its name
        self.stages = tuple(stages)  # in their declared order (`threadline.stages`)
        # Whether a turn is done with its last reply (no stage acts after the answer).
        self._done_with_last_reply = answer_ends_walk(self.stages)
        self._together = together  # the backend's joint write (`threadline.after_delivery`)
        # Turns marked answered with their last reply: whether others are open, by turn id.
        self._finished: dict[str, bool] = {}
        # Decides tool approvals as their button presses arrive (see `agents.approvals`).
        self.approvals = approvals
        self.owners = ConversationOwners(inbox=inbox, lock=lock, answer=self._answer,
                                         scan_interval=scan_interval)
        self.edits = TurnEdits(inbox=inbox, store=self.store, wake=self.wake,
                               cancelled=lambda turn_id: self._resolve(turn_id, []),
                               answer_edits=answer_edits)
        self._waiting: dict[str, list[asyncio.Future[list[AgentResult]]]] = {}

    # -- receive and record ----------------------------------------------------------------

    async def receive(self, message: StoredMessage, channel: Channel | None) -> bool:
        """Record an inbound turn durably as "to answer"; False for a redelivery.

        Returns only once the turn is durable: the caller may then acknowledge the platform.
        Raises `TurnNotRecordedError` when it could not be recorded (do not acknowledge).
        """
        if self.routing.is_own_bot(message):
            log.debug("pipeline.own_echo_ignored", conversation_id=message.conversation_id,
                      turn_id=message.id)
            return False
        message = seal_link_codes(message)  # before anything keeps the text
        try:
            new = await self.inbox.receive(message, channel=channel.name if channel else None)
            if self.approvals is not None:
                # Decided now, not in its turn: the turn waiting for this decision holds the
                # conversation. A redelivery decides again harmlessly (a guarded update).
                await self.approvals.on_click(message)
        except StoreError as exc:
            raise TurnNotRecordedError(
                f"turn {message.id} of conversation {message.conversation_id} was not recorded "
                f"({exc}); it was not acknowledged, so the platform can deliver it again"
            ) from exc
        if not new:
            log.info("pipeline.redelivery_ignored", conversation_id=message.conversation_id,
                     turn_id=message.id)
            return False
        self.wake(message.conversation_id)
        return True

    async def answered(self, message: StoredMessage, channel: Channel | None
                       ) -> list[AgentResult]:
        """Receive a turn and wait until this process has answered it; its results.

        For callers without a platform to acknowledge (the local channel, tests, scripts).
        A redelivery returns no results.
        """
        done: asyncio.Future[list[AgentResult]] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(message.id, []).append(done)
        try:
            if not await self.receive(message, channel):
                return []
            return await asyncio.shield(done)
        finally:
            waiting = self._waiting.get(message.id, [])
            if done in waiting:
                waiting.remove(done)
            if not waiting:
                self._waiting.pop(message.id, None)

    # -- own each conversation (`threadline.owners`) ------------------------------------

    @property
    def started(self) -> bool:
        return self.owners.started

    def wake(self, conversation_id: str) -> None:
        """Make sure this process tries to own the conversation and answer its open turns."""
        self.owners.wake(conversation_id)

    async def scan(self) -> None:
        """Wake every conversation with turns still to answer."""
        await self.owners.scan()

    def start(self) -> None:
        """Begin answering: what was received meanwhile, and turns left from before (a crash,
        another process).

        Call it once the channels are connected: routing needs each channel's bot identity.
        """
        self.writer.start()
        self.owners.start()

    async def stop(self, *, drain_timeout: float = 30.0) -> None:
        """Finish the turns being answered (for at most `drain_timeout` s); take no new ones.

        Turns recorded but not yet answered stay in the inbox for the next start.
        """
        await self.owners.stop(drain_timeout=drain_timeout)

    # -- one turn --------------------------------------------------------------------------

    async def _answer(self, turn: InboxTurn) -> bool:  # True: others may be open
        try:
            with tracing.turn_span(turn, turn.attempts) as span:
                state, others = await self._attempt(turn, turn.attempts)
                span.set({"threadline.outcome": state.value})
        finally:
            self._finished.pop(turn.turn_id, None)  # an attempt that did not end as answered
        return others

    async def _attempt(self, turn: InboxTurn, attempt: int) -> tuple[TurnState, bool]:
        """One attempt at a turn, to its end (answered, given up, or left for another try),
        and whether its conversation has other turns open (`TurnInbox.finish`)."""
        bound = log.bind(conversation_id=turn.conversation_id, turn_id=turn.turn_id,
                         channel=turn.channel, attempt=attempt, **tracing.log_fields())
        if attempt > self.max_attempts:
            error = (f"not answered after {self.max_attempts} attempts (the process answering "
                     f"it stopped or failed each time; last error: {turn.error or 'none'})")
            bound.error("pipeline.turn_given_up", error=error)
            others = await self.inbox.finish(turn.turn_id, TurnState.GIVEN_UP, error=error)
            self._resolve(turn.turn_id, [])
            return TurnState.GIVEN_UP, others
        try:
            results = await self._answer_turn(turn.message, turn.channel, bound,
                                              retried=attempt > 1)
        except StoreError:
            raise  # the store is away: the turn stays open and is taken again later
        except Exception as exc:
            bound.exception("pipeline.turn_failed")
            state = TurnState.GIVEN_UP if attempt >= self.max_attempts else TurnState.RECEIVED
            others = await self.inbox.finish(turn.turn_id, state, error=repr(exc)[:2000])
            if state is TurnState.RECEIVED:
                raise  # leave the conversation; the scan takes the turn again
            self._resolve(turn.turn_id, [])
            return state, others
        if turn.turn_id in self._finished:  # marked with its last reply
            others = self._finished.pop(turn.turn_id)
        else:
            others = await self.inbox.finish(turn.turn_id, TurnState.ANSWERED)
        self._resolve(turn.turn_id, results)
        return TurnState.ANSWERED, others

    async def _answer_turn(self, message: StoredMessage, channel_name: str | None,
                           bound: Any, *, retried: bool) -> list[AgentResult]:
        """What kind of turn this is and whom it is for, walked through the stages."""
        attachment = self.routing.attachment(channel_name)
        turn = Turn(message=message, attachment=attachment, retried=retried, log=bound,
                    actions=self, scheduled=ScheduledTurn.read(message),
                    command=self.routing.command_in(message, attachment))
        if turn.scheduled is None and turn.command is None:
            turn = replace(turn, routes=await self.routing.routes(message, attachment))
        return await walk(self.stages, turn, self._answer_routes)

    async def _answer_routes(self, turn: Turn) -> list[AgentResult]:
        """The last step: the turn stored, and the agents it addresses answer, then those
        their replies hand it to, within the turn's budgets."""
        # In the history, in the order turns are answered, as its author left it.
        message = await self.record(turn.message)
        if message is None:
            return []
        routes = turn.routes
        if message.content != turn.message.content:  # edited since it was taken
            routes = tuple(r for r in await self.routing.routes(message, turn.attachment)
                           if r[0] not in turn.refused)
        # Its documents and voice notes are read now, off the platform's acknowledgement.
        channel = turn.attachment.channel
        message = await read_files(message, store=self.store, intake=(
            channel.file_intake if channel is not None else None))
        tracing.routed(list(routes))
        if not routes:
            return []
        message = await self._in_reply_thread(message, turn.attachment.channel)
        results: list[AgentResult] = []
        pending = deque([(message, 0, list(routes))])
        while pending:
            inbound, hops, onward_routes = pending.popleft()
            for index, (name, reason) in enumerate(onward_routes):
                if len(results) >= self.max_agent_turns:
                    turn.log.warning("pipeline.turn_budget_spent", agent=name,
                                     max_agent_turns=self.max_agent_turns)
                    return results
                last = not pending and index == len(onward_routes) - 1
                result = await self.run_agent(self.agents[name], inbound, turn, reason=reason,
                                              last=last)
                if result is None:
                    continue
                results.append(result)
                if result.outbound is None:
                    continue
                self.routing.remember_reply(inbound, result)
                onward = route(result.outbound, turn.attachment.listeners, handoff=True)
                if not onward:
                    continue
                if hops + 1 > self.max_hops:
                    turn.log.warning("pipeline.hop_limit", agent=name, hops=hops,
                                     max_hops=self.max_hops)
                    continue
                pending.append((result.outbound, hops + 1, onward))
        return results

    async def record(self, message: StoredMessage) -> StoredMessage | None:
        """Store the turn being answered, then read it back from the inbox: as its author left
        it (an edit that came in since it was taken is stored too), or None when they
        deleted it meanwhile (it leaves the history; nobody answers it).

        Read after storing, so an edit or deletion lands in one of the two: the inbox row,
        read here, or the history, which holds the turn from here on (`edit`, `delete`).
        """
        bound = log.bind(conversation_id=message.conversation_id, turn_id=message.id)
        recorded = await self.writer.record(message)
        # What the history holds; a turn stored by an earlier attempt may hold an older
        # edit's text than the row, so it is written again.
        stored = None if recorded == "duplicate" else message.content
        while True:
            current = await self.inbox.retake(message.id)
            if current is None:
                await self.store.delete_messages(message.conversation_id, [message.id])
                bound.info("pipeline.taken_turn_deleted")
                return None
            if current.content == stored:
                return replace(message, content=current.content)
            # Read again after storing it: an edit that changed the row before that read
            # stores its own text after this write.
            await self.store.edit_message(message.conversation_id, message.id, current.content)
            stored = current.content
            bound.info("pipeline.taken_turn_stored_as_edited")

    async def run_agent(self, agent: Agent, inbound: StoredMessage, turn: Turn, *,
                        reason: str, whole: bool = False, last: bool = False
                        ) -> AgentResult | None:
        """The agent's answer to `inbound`: run now, or the one an earlier attempt delivered
        (only a turn taken again after a crash can have one). `whole`: posted once finished,
        never shown while written. `last`: nothing of the turn follows this answer but whom
        its reply hands the turn to (see `_deliver_and_record`)."""
        bound, attachment = turn.log, turn.attachment
        reply_id = reply_turn_id(inbound, agent.name)
        earlier = None
        if turn.retried:
            try:
                earlier = await self.inbox.delivery(reply_id)
            except StoreError as exc:
                bound.warning("pipeline.ledger_unavailable", agent=agent.name, error=str(exc))
        if earlier is not None and interrupted_stream(earlier):
            bound.warning("pipeline.interrupted_stream", agent=agent.name, reply_id=reply_id,
                          detail="the process answering it died while the reply was being "
                                 "written; answered again")
        elif earlier is not None:
            return await self._earlier_reply(agent, earlier, bound)
        channel = attachment.channel
        after = self._after_delivery()
        deliver = (LedgeredReply(inbox=self.inbox, channel=channel, inbound=inbound,
                                 agent_name=agent.name,
                                 post=channel.send_reply if whole else None,
                                 after_delivery=after)
                   if channel is not None else None)
        aliases = (channel.identity.aliases if channel is not None and channel.identity
                   and attachment.agents[0] is agent else ())
        try:
            self.routing.answering(inbound, agent.name)
            return await agent.invoke(inbound, aliases=aliases, deliver=deliver, reason=reason,
                                      recording=self._reply_step(deliver, after, turn, last),
                                      channel=channel.name if channel is not None else None,
                                      after_delivery=after)
        except StoreError:
            raise
        except Exception:
            bound.exception("pipeline.agent_failed", agent=agent.name)
            return None

    async def _earlier_reply(self, agent: Agent, earlier: Delivery, bound: Any) -> AgentResult:
        """The reply an earlier attempt claimed: never posted again, kept in the history.

        Delivered: it is the answer (stored again in case the process died before storing
        it). Still `delivering`: the process died between posting it and recording that; nobody
        knows whether people saw it, so it is stored marked as such, logged, and not reposted.
        """
        reply = earlier.reply
        if earlier.state is DeliveryState.DELIVERED:
            bound.info("pipeline.reply_already_delivered", agent=agent.name, reply_id=reply.id)
            if earlier.platform_ids:
                reply = with_platform_ids(reply, earlier.platform_ids)
            stop_reason = "delivered"
        else:
            bound.error("pipeline.delivery_uncertain", agent=agent.name, reply_id=reply.id,
                        detail="a process stopped between posting this reply and recording "
                               "it; kept in the history, not posted again")
            reply = replace(reply, metadata=replace(reply.metadata, extra={
                **reply.metadata.extra, "delivery": "uncertain"}))
            stop_reason = "delivery_uncertain"
        await self.writer.record(reply)
        return AgentResult(agent_name=agent.name, conversation_id=reply.conversation_id,
                           output=reply.content, outbound=reply,
                           delivered_ids=earlier.platform_ids, stop_reason=stop_reason)

    # -- what the stages are given (`threadline.stages.TurnActions`) ------------------------

    @property
    def outbox(self) -> Outbox | None:
        return self.writer.outbox

    async def answer(self, turn: Turn, responder: Agent, answer: CommandReply, *,
                     stop_reason: str, command: str | None = None,
                     reply_id: str | None = None) -> AgentResult:
        """An answer written without a model (a command's, a schedule's post, a notice),
        delivered and recorded like every reply; an earlier attempt's, when it posted it.
        `reply_id` names an answer other than the turn's own reply (a notice elsewhere);
        an answer's `private_text` is what is posted, its masked `text` what is kept."""
        inbound = turn.message
        if turn.retried and reply_id is None:
            earlier = await self.inbox.delivery(reply_turn_id(inbound, responder.name))
            if earlier is not None:
                return await self._earlier_reply(responder, earlier, turn.log)
        reply = responder.reply_turn(inbound, answer.text)
        reply = replace(reply, id=reply_id or reply.id, metadata=replace(
            reply.metadata, extra={**answer.detail, **({"command": command} if command else {})}))
        channel = turn.attachment.channel
        deliver = None
        after = self._after_delivery()
        if channel is not None:
            post: Post = (partial(channel.send_choices, choices=answer.choices)
                          if answer.choices else channel.send_reply)
            if answer.private_text is not None:
                post = _posting(post, answer.private_text)
            deliver = LedgeredReply(inbox=self.inbox, channel=channel, inbound=inbound,
                                    agent_name=responder.name, post=post,
                                    after_delivery=after)
        return await self._deliver_and_record(deliver, after, AgentResult(
            agent_name=responder.name, conversation_id=inbound.conversation_id,
            output=reply.content, outbound=reply, stop_reason=stop_reason))

    async def settle(self, turn_ids: Sequence[str], results: list[AgentResult]) -> None:
        """Turns one reply answered with the turn being answered (a burst): each answered."""
        for turn_id in turn_ids:
            await self.inbox.finish(turn_id, TurnState.ANSWERED)
            self._resolve(turn_id, results)

    def _after_delivery(self) -> AfterDelivery:
        """Where one reply's writes gather until it is delivered (`threadline.after_delivery`)."""
        return AfterDelivery(inbox=self.inbox, writer=self.writer, together=self._together)

    def _reply_step(self, deliver: Deliver | None, after: AfterDelivery, turn: Turn,
                    last: bool) -> Interceptor:
        """An agent turn's outermost step: the status shown while the agent runs, then its
        reply delivered and recorded (`_deliver_and_record`), or abandoned when it fails (what
        the turn owes, its spend, is written all the same)."""

        async def step(context: TurnContext, call_next: CallNext) -> AgentResult:
            try:
                if deliver is not None:
                    await deliver.working()
                try:
                    result = await call_next()
                except BaseException as exc:
                    if deliver is not None:
                        await deliver.abandon(exc)
                    raise
                return await self._deliver_and_record(deliver, after, result,
                                                      turn=turn if last else None)
            except BaseException:
                # What is gathered and not yet written (the spend) is written all the same.
                await asyncio.shield(after.commit(None))
                raise

        return step

    async def _deliver_and_record(self, deliver: Deliver | None, after: AfterDelivery,
                                  result: AgentResult, *, turn: Turn | None = None
                                  ) -> AgentResult:
        """Every reply's one path, a model's or a command's: posted once through the reply
        ledger (when there is a channel), then written with what it leaves (`after`): its
        ledger entry, its copy in the history through capture's writer (durable even while
        the store is away, never fatal to the reply), the turn's spend.

        `turn`, given for the turn's last answer: when the reply hands the turn to nobody,
        nothing follows it, and the turn is marked answered in the same write."""
        with tracing.deliver_span(result.agent_name) as span:
            if deliver is not None:
                result = await post_result(deliver, result)
            answered = None
            if turn is not None and self._done_with_last_reply and (
                    result.outbound is None
                    or not route(result.outbound, turn.attachment.listeners, handoff=True)):
                answered = turn.message.id
            # Shielded: a posted reply is recorded whole even when its turn is cancelled.
            others = await asyncio.shield(after.commit(result.outbound, answered=answered))
            if answered is not None and others is not None:
                self._finished[answered] = others
            span.set({"threadline.delivered_ids": list(result.delivered_ids)})
        return result

    def _resolve(self, turn_id: str, results: list[AgentResult]) -> None:
        for waiter in self._waiting.pop(turn_id, []):
            if not waiter.done():
                waiter.set_result(results)

    async def _in_reply_thread(self, message: StoredMessage, channel: Channel | None
                               ) -> StoredMessage:
        """The turn as it stands in the conversation the reply will live in.

        When the platform answers in a new thread (Slack, under a channel post), the post is
        also recorded as the first turn of that thread's conversation, so the reply and every
        follow-up in the thread see what started it.
        """
        if channel is None:
            return message
        home = channel.reply_conversation_id(message)
        if home == message.conversation_id:
            return message
        opening = thread_opening(message, thread_conversation_id=home)
        await self.writer.record(opening)
        return opening


def _posting(post: Post, private: str) -> Post:
    """`post` that posts `private` whatever text it is given (an answer's private text; the
    ledger and the history keep the masked one)."""
    async def posting(inbound: StoredMessage, text: str, *,
                      agent_name: str | None = None) -> list[str]:
        return await post(inbound, private, agent_name=agent_name)
    return posting
