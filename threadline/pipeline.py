"""The turn pipeline: one owner for every inbound turn, from the platform event to the reply.

    receive          the channel hands over a normalized turn; a turn the inbox or the history
                     already holds is not new (a platform redelivery)
    record           the turn is durable in the inbox as "to answer"; only now may the channel
                     acknowledge the platform (`receive` returned), so a crash loses nothing;
                     an edit or a deletion of it changes it there until the history holds it
                     (`edit`, `delete`), the stored turn from then on
    own              one process at a time owns a conversation (the conversation lock) and takes
                     its open turns in arrival order; a process that dies releases it, and
                     whoever owns it next answers what was left (`scan` finds it)
    store            the turn taken is stored in the history, then read back from the inbox
                     (`record`): an edit or deletion that came in since it was taken
                     is applied to the stored turn before anything answers it
    route            who answers, and why: `history.addressing.route`, decided once; a
                     command (`/forget`, see `threadline.commands`) is answered by its handler
                     instead, never by a model, through the same reply ledger, and recorded;
                     a schedule's turn (`threadline.schedules`) is posted as written or
                     answered by its agent; in a conversation handed to people
                     (`threadline.handoff`) the turn is recorded and nobody answers
    answer           each addressed agent runs its turn inside the pipeline's reply step
                     (the status shown while its own interceptors and the model run)
    deliver, record  every reply, a model's or a command's, takes one path
                     (`_deliver_and_record`): claimed in the reply ledger, posted, recorded
                     as delivered with its platform ids, then stored through capture's
                     durable writer, the one place turns are written
    hand off         a reply that names other agents is answered by them, within the budget of
                     `max_agent_turns` per inbound turn and `max_hops` in depth
    finish           the inbound turn is marked answered (or given up after `max_attempts`);
                     one deleted meanwhile stays cancelled, one edited to be answered again
                     waits once more

With tracing on (`threadline.tracing`), each attempt at a turn is one trace: its span holds
the routing decision, each agent's answer and each delivery.

A turn answered again after a crash does not post twice: the reply ledger says what was already
delivered (its stored reply is reused) or that the process died between posting and recording
it (logged, not reposted blindly); a reply the process was still streaming when it died was
never whole, and the turn is answered again (`reply_delivery`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import structlog

from threadline.agents.agent import Agent
from threadline.agents.approvals import ApprovalGate
from threadline.channels.base import Channel, Post
from threadline.channels.files import read_files
from threadline.commands import CommandChoice, CommandRegistry, CommandReply
from threadline.commands.registry import Notify, Origin
from threadline.errors import StoreError, TurnNotRecordedError
from threadline.history.addressing import normalize_mention, route
from threadline.history.inbox import Delivery, DeliveryState, InboxTurn, TurnInbox, TurnState
from threadline.history.model import StoredMessage, storable_text
from threadline.interceptors.base import CallNext, Interceptor
from threadline.interceptors.capture import DurableWriter
from threadline.interceptors.outbox import Outbox
from threadline.locks import ConversationLock
from threadline.people.link_codes import mask_link_codes, seal_link_codes
from threadline.reply_delivery import (
    LedgeredReply,
    interrupted_stream,
    post_result,
    with_platform_ids,
)
from threadline.schedules.turns import ScheduledTurn
from threadline.stages import Attachment, CommandTurn, Stage, Turn, walk
from threadline.tracing import spans as tracing
from threadline.turn import EDITED, AgentResult, Deliver, TurnContext, reply_turn_id

log = structlog.get_logger("threadline.pipeline")

MAX_REMEMBERED_REPLIES = 10_000
SECOND_LOOK = 0.2  # seconds before looking again at a conversation another process owned


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
    ) -> None:
        self._agents = agents
        self.commands = commands or CommandRegistry()
        self.inbox = inbox
        self.writer = writer
        self.store = writer.store
        self.lock = lock
        self.default = default
        self.max_hops = max_hops
        self.max_agent_turns = max_agent_turns
        self.max_attempts = max_attempts
        self.answer_bots = answer_bots
        self.scan_interval = scan_interval
        self.answer_edits = answer_edits
        self.attachments: dict[str, Attachment] = {}
        self.stages = tuple(stages)  # in their declared order (`threadline.stages`)
        # Decides tool approvals as their button presses arrive (see `agents.approvals`).
        self.approvals = approvals
        self._wanted: set[str] = set()
        self._owners: dict[str, asyncio.Task[None]] = {}
        self._waiting: dict[str, list[asyncio.Future[list[AgentResult]]]] = {}
        self._scanner: asyncio.Task[None] | None = None
        self._closing = False
        self.started = False
        # Conversations answered at once in this process (each held one costs the lock a
        # database connection on PostgreSQL); the others wait their turn here.
        self._slots = asyncio.Semaphore(lock.concurrency)
        # (conversation, platform message id) -> agent name: a reply to a reply reaches the
        # agent that wrote it even when several agents share one bot account.
        self._reply_authors: OrderedDict[tuple[str, str], str] = OrderedDict()

    # -- receive and record ----------------------------------------------------------------

    async def receive(self, message: StoredMessage, channel: Channel | None) -> bool:
        """Record an inbound turn durably as "to answer"; False for a redelivery.

        Returns only once the turn is durable: the caller may then acknowledge the platform.
        Raises `TurnNotRecordedError` when it could not be recorded (do not acknowledge).
        """
        if self._own_bot(message):
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

    # -- edits and deletions -----------------------------------------------------------------

    async def edit(self, conversation_id: str, turn_id: str, content: str) -> None:
        """A person edited a message: a turn not answered yet is answered as edited (the
        worker that took it reads it back once it has stored it: `record`); a stored
        one is edited in the history (and answered again when `answer_edits` is on)."""
        bound = log.bind(conversation_id=conversation_id, turn_id=turn_id)
        # Edited text is kept like a new turn's: codes masked, unstorable characters replaced.
        content = storable_text(mask_link_codes(content))
        try:
            open_state = await self.inbox.edit_open(turn_id, content)
            if open_state is TurnState.RECEIVED:
                bound.info("pipeline.waiting_turn_edited")
                return
            if not await self.store.edit_message(conversation_id, turn_id, content):
                if open_state is None:
                    bound.warning("pipeline.edit_unknown_turn",
                                  detail="neither in the inbox nor stored (said before the bot "
                                         "joined): nothing changed")
                else:
                    bound.info("pipeline.taken_turn_edited")
                return
            bound.info("pipeline.stored_turn_edited", answered_again=self.answer_edits)
            if self.answer_edits:
                await self._answer_again(conversation_id, turn_id, content, bound)
        except StoreError as exc:
            bound.error("pipeline.edit_failed", error=str(exc))

    async def delete(self, conversation_id: str, turn_id: str) -> None:
        """A person deleted a message: a turn not answered yet is not answered (a worker that
        took it drops it when it reads it back); a stored one leaves the history."""
        bound = log.bind(conversation_id=conversation_id, turn_id=turn_id)
        try:
            open_state = await self.inbox.cancel_open(turn_id)
            if open_state is not None:
                bound.info("pipeline.open_turn_cancelled", was=open_state.value)
            if open_state is TurnState.RECEIVED:
                self._resolve(turn_id, [])  # nobody took it; a worker that did resolves it
            await self.store.delete_messages(conversation_id, [turn_id])
        except StoreError as exc:
            bound.error("pipeline.delete_failed", error=str(exc))

    async def _answer_again(self, conversation_id: str, turn_id: str, content: str,
                            bound: Any) -> None:
        """The edited turn waits in the inbox once more, marked with its edit (so its replies
        are new turns: `reply_turn_id`)."""
        [stored] = await self.store.get_by_ids(conversation_id, [turn_id])
        digest = hashlib.sha256(content.encode()).hexdigest()[:12]
        edited = replace(stored, sequence=None, token_count=None, metadata=replace(
            stored.metadata, extra={**stored.metadata.extra, EDITED: digest}))
        if await self.inbox.answer_again(edited):
            self.wake(conversation_id)
        else:
            bound.warning("pipeline.edit_not_answered_again",
                          detail="the inbox no longer holds this turn, or it still waits")

    # -- own each conversation -------------------------------------------------------------

    def wake(self, conversation_id: str) -> None:
        """Make sure this process tries to own the conversation and answer its open turns."""
        if self._closing:
            return  # recorded; answered after the restart
        self._wanted.add(conversation_id)
        if self.started and conversation_id not in self._owners:
            self._owners[conversation_id] = asyncio.get_running_loop().create_task(
                self._own(conversation_id), name=f"threadline-turns-{conversation_id}")

    async def _own(self, conversation_id: str) -> None:
        """Answer the conversation's open turns while it is wanted and ours to own."""
        second_look = True
        try:
            while conversation_id in self._wanted and not self._closing:
                self._wanted.discard(conversation_id)
                async with self._slots, self.lock.try_hold(conversation_id) as owned:
                    if owned:
                        await self._answer_open_turns(conversation_id)
                        continue
                # Another process owns it and answers what it finds. It may have let go just
                # before our turn was recorded: look once more in a moment; after that the scan
                # looks every `scan_interval` (polling here would cost every process a query
                # per conversation it does not own).
                if second_look:
                    second_look = False
                    await asyncio.sleep(SECOND_LOOK)
                    self._wanted.add(conversation_id)
        except StoreError as exc:
            log.warning("pipeline.store_unavailable", conversation_id=conversation_id,
                        error=str(exc), retry_in=self.scan_interval)
        except Exception:
            log.exception("pipeline.owner_failed", conversation_id=conversation_id)
        finally:
            del self._owners[conversation_id]

    async def _answer_open_turns(self, conversation_id: str) -> None:
        while not self._closing:
            turns = await self.inbox.open_turns(conversation_id)
            if not turns:
                return
            for turn in turns:
                if self._closing:
                    return
                await self._answer(turn)

    async def scan(self) -> None:
        """Wake every conversation with turns still to answer (after a crash, or left by a
        process that died)."""
        for conversation_id in await self.inbox.conversations_waiting(limit=1000):
            if conversation_id not in self._owners:
                log.info("pipeline.open_turns_found", conversation_id=conversation_id)
                self.wake(conversation_id)

    async def _scan_forever(self) -> None:
        while True:
            try:
                await self.scan()
            except StoreError as exc:
                log.warning("pipeline.scan_failed", error=str(exc))
            await asyncio.sleep(self.scan_interval)

    def start(self) -> None:
        """Begin answering: what was received meanwhile, and turns left from before (a crash,
        another process).

        Call it once the channels are connected: routing needs each channel's bot identity.
        """
        self._closing = False
        self.started = True
        self.writer.start()
        for conversation_id in list(self._wanted):
            self.wake(conversation_id)
        if self._scanner is None:
            self._scanner = asyncio.get_running_loop().create_task(self._scan_forever())

    async def stop(self, *, drain_timeout: float = 30.0) -> None:
        """Finish the turns being answered (for at most `drain_timeout` s); take no new ones.

        Turns recorded but not yet answered stay in the inbox for the next start.
        """
        self._closing = True
        self.started = False
        if self._scanner is not None:
            self._scanner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scanner
            self._scanner = None
        owners = [t for t in self._owners.values() if t is not asyncio.current_task()]
        if owners:
            _, late = await asyncio.wait(owners, timeout=drain_timeout)
            if late:
                log.warning("pipeline.shutdown_timeout", in_flight=len(late),
                            drain_timeout=drain_timeout)

    # -- one turn --------------------------------------------------------------------------

    async def _answer(self, turn: InboxTurn) -> None:
        attempt = await self.inbox.begin(turn.turn_id)
        if attempt == 0:
            return  # deleted since the conversation's open turns were read
        with tracing.turn_span(turn, attempt) as span:
            state = await self._attempt(turn, attempt)
            span.set({"threadline.outcome": state.value})

    async def _attempt(self, turn: InboxTurn, attempt: int) -> TurnState:
        """One attempt at a turn, to its end: answered, given up, or left for another try."""
        bound = log.bind(conversation_id=turn.conversation_id, turn_id=turn.turn_id,
                         channel=turn.channel, attempt=attempt, **tracing.log_fields())
        if attempt > self.max_attempts:
            error = (f"not answered after {self.max_attempts} attempts (the process answering "
                     f"it stopped or failed each time; last error: {turn.error or 'none'})")
            bound.error("pipeline.turn_given_up", error=error)
            await self.inbox.finish(turn.turn_id, TurnState.GIVEN_UP, error=error)
            self._resolve(turn.turn_id, [])
            return TurnState.GIVEN_UP
        try:
            results = await self._answer_turn(turn.message, turn.channel, bound,
                                              retried=attempt > 1)
        except StoreError:
            raise  # the store is away: the turn stays open and is taken again later
        except Exception as exc:
            bound.exception("pipeline.turn_failed")
            state = TurnState.GIVEN_UP if attempt >= self.max_attempts else TurnState.RECEIVED
            await self.inbox.finish(turn.turn_id, state, error=repr(exc)[:2000])
            if state is TurnState.RECEIVED:
                raise  # leave the conversation; the scan takes the turn again
            self._resolve(turn.turn_id, [])
            return state
        await self.inbox.finish(turn.turn_id, TurnState.ANSWERED)
        self._resolve(turn.turn_id, results)
        return TurnState.ANSWERED

    async def _answer_turn(self, message: StoredMessage, channel_name: str | None,
                           bound: Any, *, retried: bool) -> list[AgentResult]:
        """What kind of turn this is and whom it is for, walked through the stages."""
        attachment = self.attachments.get(channel_name or "", self.default)
        turn = Turn(message=message, attachment=attachment, retried=retried, log=bound,
                    actions=self, scheduled=ScheduledTurn.read(message),
                    command=self._command_in(message, attachment))
        if turn.scheduled is None and turn.command is None:
            turn = replace(turn, routes=await self._routes(message, attachment))
        return await walk(self.stages, turn, self._answer_routes)

    async def _routes(self, message: StoredMessage, attachment: Attachment
                      ) -> tuple[tuple[str, str], ...]:
        """Who answers a message, and why (`history.addressing.route`), decided once."""
        return tuple(route(message, attachment.listeners,
                           bot_aliases=self._bot_aliases(attachment),
                           author_of_replied=await self._author_of_replied(message),
                           answer_bots=self.answer_bots))

    async def _answer_routes(self, turn: Turn) -> list[AgentResult]:
        """The last step: the turn stored, and the agents it addresses answer, then those
        their replies hand it to, within the turn's budgets."""
        # In the history, in the order turns are answered, as its author left it.
        message = await self.record(turn.message)
        if message is None:
            return []
        routes = turn.routes
        if message.content != turn.message.content:  # edited since it was taken
            routes = tuple(r for r in await self._routes(message, turn.attachment)
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
            for name, reason in onward_routes:
                if len(results) >= self.max_agent_turns:
                    turn.log.warning("pipeline.turn_budget_spent", agent=name,
                                     max_agent_turns=self.max_agent_turns)
                    return results
                result = await self.run_agent(self._agents[name], inbound, turn, reason=reason)
                if result is None:
                    continue
                results.append(result)
                if result.outbound is None:
                    continue
                self._remember_reply(inbound, result)
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
                        reason: str, whole: bool = False) -> AgentResult | None:
        """The agent's answer to `inbound`: run now, or the one an earlier attempt delivered
        (only a turn taken again after a crash can have one). `whole`: posted once finished,
        never shown while written."""
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
        deliver = (self._deliver(channel, inbound, agent.name,
                                 post=channel.send_reply if whole else None)
                   if channel is not None else None)
        aliases = (channel.identity.aliases if channel is not None and channel.identity
                   and attachment.agents[0] is agent else ())
        try:
            return await agent.invoke(inbound, aliases=aliases, deliver=deliver, reason=reason,
                                      recording=self._reply_step(deliver),
                                      channel=channel.name if channel is not None else None)
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
    def agents(self) -> Mapping[str, Agent]:
        return self._agents

    @property
    def outbox(self) -> Outbox | None:
        return self.writer.outbox

    def _command_in(self, message: StoredMessage, attachment: Attachment
                    ) -> CommandTurn | None:
        """The registered command this turn sends, the channel whose agents it is for, and
        the agents it names (else all of them).

        `/name@bot` is for the bot named (another of our channels, perhaps); a bot we do not
        run makes it someone else's command, an ordinary turn here.
        """
        if message.participant.kind != "user":
            return None
        found = self.commands.find(message)
        if found is None:
            return None
        command, call = found
        chosen: Attachment | None = attachment
        if call.target is not None:
            target = normalize_mention(call.target)
            chosen = next((c for c in (attachment, *self.attachments.values())
                           if target in {normalize_mention(a) for a in self._bot_aliases(c)}),
                          None)
        if chosen is None:
            return None
        named = {normalize_mention(word) for word in call.args.split()}
        targets = tuple(a for a in chosen.agents if normalize_mention(a.name) in named)
        return CommandTurn(command, call, chosen, targets or chosen.agents)

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
        if channel is not None:
            post: Post = (partial(channel.send_choices, choices=answer.choices)
                          if answer.choices else channel.send_reply)
            if answer.private_text is not None:
                post = _posting(post, answer.private_text)
            deliver = self._deliver(channel, inbound, responder.name, post=post)
        return await self._deliver_and_record(deliver, AgentResult(
            agent_name=responder.name, conversation_id=inbound.conversation_id,
            output=reply.content, outbound=reply, stop_reason=stop_reason))

    def notifier(self, command: str) -> Notify:
        """How `command`'s handler posts where an earlier turn was said (`CommandRequest`)."""
        return partial(self._notify, command=command)

    def _reply_step(self, deliver: Deliver | None) -> Interceptor:
        """An agent turn's outermost step: the status shown while the agent runs, then its
        reply delivered and recorded (`_deliver_and_record`), or abandoned when it fails."""

        async def step(context: TurnContext, call_next: CallNext) -> AgentResult:
            if deliver is None:
                return await self._deliver_and_record(None, await call_next())
            await deliver.working()
            try:
                result = await call_next()
            except BaseException as exc:
                await deliver.abandon(exc)
                raise
            return await self._deliver_and_record(deliver, result)

        return step

    async def _deliver_and_record(self, deliver: Deliver | None, result: AgentResult
                                  ) -> AgentResult:
        """Every reply's one path, a model's or a command's: posted once through the reply
        ledger (when there is a channel), then stored by capture's writer (durable even while
        the store is away, never fatal to the reply)."""
        with tracing.deliver_span(result.agent_name) as span:
            if deliver is not None:
                result = await post_result(deliver, result)
            if result.outbound is not None:
                await self.writer.record(result.outbound)
            span.set({"threadline.delivered_ids": list(result.delivered_ids)})
        return result

    async def _notify(self, origin: Origin, text: str, *, choices: tuple[CommandChoice, ...] = (),
                      tag: str, command: str) -> bool:
        """A command's message posted where `origin` was said, on the channel that took it
        (see `CommandRequest.notify`); False when that channel is not here or it failed."""
        attachment = self.attachments.get(origin.channel)
        if attachment is None or attachment.channel is None or not attachment.agents:
            log.warning("pipeline.notice_not_posted", channel=origin.channel,
                        conversation_id=origin.conversation_id,
                        reason="that channel does not run in this process")
            return False
        found = await self.store.get_by_ids(origin.conversation_id, [origin.turn_id])
        if not found:
            return False
        responder = attachment.agents[0]
        there = Turn(message=found[0], attachment=attachment, retried=False, log=log,
                     actions=self)
        result = await self.answer(
            there, responder, CommandReply(text, choices=choices), stop_reason="command",
            command=command, reply_id=f"{reply_turn_id(found[0], responder.name)}:{tag}")
        return bool(result.delivered_ids)

    def _deliver(self, channel: Channel, inbound: StoredMessage, agent_name: str, *,
                 post: Post | None = None) -> Deliver:
        """Posts a reply once: claimed in the ledger first, recorded as delivered after.

        `post` posts it whole instead of the channel's live reply (a command's answer with
        buttons uses `send_choices`)."""
        return LedgeredReply(inbox=self.inbox, channel=channel, inbound=inbound,
                             agent_name=agent_name, post=post)

    def _resolve(self, turn_id: str, results: list[AgentResult]) -> None:
        for waiter in self._waiting.pop(turn_id, []):
            if not waiter.done():
                waiter.set_result(results)

    # -- what routing needs to know --------------------------------------------------------

    def _own_bot(self, message: StoredMessage) -> bool:
        """A message posted by one of our own bot accounts (seen by another of our channels)."""
        author = normalize_mention(message.participant.id)
        return any(author in {normalize_mention(a) for a in self._bot_aliases(attachment)}
                   for attachment in self.attachments.values())

    @staticmethod
    def _bot_aliases(attachment: Attachment) -> tuple[str, ...]:
        channel = attachment.channel
        return channel.identity.aliases if channel is not None and channel.identity else ()

    async def _author_of_replied(self, message: StoredMessage) -> str | None:
        """The agent that wrote the message this one replies to (memory first, then store)."""
        replied = message.metadata.reply_to_message_id
        if replied is None:
            return None
        known = self._reply_authors.get((message.conversation_id, replied))
        if known is not None:
            return known
        try:
            stored = await self.store.find_by_platform_id(message.conversation_id, replied)
        except StoreError as exc:
            log.warning("pipeline.reply_author_unknown", conversation_id=message.conversation_id,
                        error=str(exc))
            return None
        if stored is not None and stored.participant.kind == "agent":
            return stored.participant.id
        return None

    def _remember_reply(self, inbound: StoredMessage, result: AgentResult) -> None:
        """Which agent wrote the posted parts (and answers in the thread), for replies to them."""
        thread = inbound.metadata.thread_id
        for platform_id in [*result.delivered_ids, *([thread] if thread else [])]:
            self._reply_authors[(inbound.conversation_id, platform_id)] = result.agent_name
        while len(self._reply_authors) > MAX_REMEMBERED_REPLIES:
            self._reply_authors.popitem(last=False)

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
        root = message.metadata.message_id
        opening = replace(message, id=f"{home}:{root}", conversation_id=home, scope="thread",
                          metadata=replace(message.metadata, thread_id=root),
                          sequence=None, token_count=None)
        await self.writer.record(opening)
        return opening


def _posting(post: Post, private: str) -> Post:
    """`post` that posts `private` whatever text it is given (an answer's private text; the
    ledger and the history keep the masked one)."""
    async def posting(inbound: StoredMessage, text: str, *,
                      agent_name: str | None = None) -> list[str]:
        return await post(inbound, private, agent_name=agent_name)
    return posting
