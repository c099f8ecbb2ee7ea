"""The `bursts` stage: several messages of one person in a row, answered by one reply.

People write "hi", "my order didn't arrive", "it's #4412" as three messages. Answered one by
one, the first two replies answer too little. In `coalesce` mode, the first of them (the
burst's leader, the turn being answered) waits until its author has been quiet for `window`
seconds, measured on the times the inbox recorded the turns (not in this process's memory),
then claims in the inbox the turns that author sent in a row (`BurstInbox.claim_burst`).
The claimed turns are stored in the history in their order and the agents answer the last
one, so one model call sees them all and one reply answers them; every claimed turn is then
marked answered (`TurnActions.settle`).

A claim is durable: a process that dies while answering a burst leaves its turns open and
claimed, and whoever owns the conversation next answers exactly that burst (the reply ledger,
keyed by the last turn, keeps a posted reply from being posted again). A turn claimed by a
burst whose leader was already answered was answered with it. A process that dies while
waiting for quiet claimed nothing: the next owner waits on the same recorded times.

In `interrupt` mode, while the agent answers, the inbox is read every moment for the author's
new turns; found, they are claimed for the burst at once (durable: a crash from then on
answers them with it), and an answer whose model is still writing (`ReplyWriting`) is
stopped (a reply being streamed is edited to say so, see `reply_delivery`); once the author
is quiet again the agents answer with everything. An answer whose model had finished goes
out, and the agents answer again for the new turns.

A burst is the run of turns that follows its leader: another person's turn, a command or a
schedule's turn ends it, and so does `max_turns`. Commands and schedules' turns are never
part of one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace

import structlog

from threadline.bursts.settings import BurstSettings
from threadline.bursts.writing import ReplyWriting
from threadline.commands import CommandRegistry
from threadline.history.inbox import BurstInbox, InboxTurn, TimedTurn
from threadline.history.model import StoredMessage
from threadline.schedules.turns import ScheduledTurn
from threadline.stages import Next, Turn
from threadline.turn import AgentResult

log = structlog.get_logger("threadline.bursts")

INTERRUPTED = "(stopped: a newer message came in; answering everything together)"


class BurstStage:
    """See the module docstring. `commands` are attached at start (`BurstService`)."""

    def __init__(self, settings: BurstSettings, writing: ReplyWriting) -> None:
        self.settings = settings
        self.writing = writing
        self.commands: CommandRegistry | None = None
        # How often the inbox is read for new turns while an answer is being written.
        self.poll = min(max(settings.window / 2, 0.1), 1.0)

    async def __call__(self, turn: Turn, call_next: Next) -> list[AgentResult]:
        inbox = turn.actions.inbox
        if (not turn.routes or turn.command is not None or turn.scheduled is not None
                or not isinstance(inbox, BurstInbox)):
            return await call_next(turn)
        mode = self.settings.mode_for(agent=turn.routes[0][0], channel=turn.channel_name)
        if mode == "each":
            return await call_next(turn)
        leader = turn.message
        view = await inbox.open_turns_timed(leader.conversation_id)
        own = next((t for t in view if t.turn.turn_id == leader.id), None)
        if own is None:
            return await call_next(turn)  # deleted meanwhile: the pipeline drops it
        if own.burst not in (None, leader.id):
            turn.log.info("bursts.answered_with_its_burst", burst=own.burst)
            return []
        members = ([t.turn for t in view if t.burst == leader.id] if own.burst is not None
                   else await self._claim(inbox, turn, await self._gathered(inbox, turn, view)))
        recorded = await self._stored(turn, members)
        if not recorded:
            results: list[AgentResult] = []
        elif mode == "coalesce":
            results = await call_next(replace(turn, message=recorded[-1]))
        else:
            results = await self._interruptible(inbox, turn, members, recorded, call_next)
        await turn.actions.settle([m.turn_id for m in members], results)
        return results

    # -- a burst: wait for quiet, claim ----------------------------------------------------

    def _run(self, view: Sequence[TimedTurn], leader: StoredMessage
             ) -> tuple[list[TimedTurn], bool]:
        """The turns in a row from the leader that may join its burst, and whether the run
        is closed (another turn follows it, or it is full)."""
        ids = [t.turn.turn_id for t in view]
        run: list[TimedTurn] = []
        for timed in view[ids.index(leader.id):] if leader.id in ids else ():
            if (len(run) >= self.settings.max_turns or timed.burst not in (None, leader.id)
                    or not self._joins(timed.turn.message, leader)):
                return run, True
            run.append(timed)
        return run, len(run) >= self.settings.max_turns

    def _joins(self, message: StoredMessage, leader: StoredMessage) -> bool:
        """A turn of the leader's author that is neither a command nor a schedule's turn."""
        return (message.participant.kind == "user"
                and message.participant.id == leader.participant.id
                and ScheduledTurn.read(message) is None
                and (self.commands is None or self.commands.find(message) is None))

    async def _gathered(self, inbox: BurstInbox, turn: Turn, view: Sequence[TimedTurn]
                        ) -> list[TimedTurn]:
        """The leader's run once its author has been quiet for `window` seconds (by the
        times the inbox recorded), or the run is closed."""
        while True:
            run, closed = self._run(view, turn.message)
            if not run:
                return run
            quiet_in = run[-1].received_at + self.settings.window - time.time()
            if closed or quiet_in <= 0:
                return run
            await asyncio.sleep(quiet_in)
            view = await inbox.open_turns_timed(turn.message.conversation_id)

    async def _claim(self, inbox: BurstInbox, turn: Turn, run: Sequence[TimedTurn]
                     ) -> list[InboxTurn]:
        """The run's unclaimed turns, claimed for the leader's burst in the inbox."""
        claimed = set(await inbox.claim_burst(
            turn.message.id, [t.turn.turn_id for t in run if t.burst is None]))
        members = [t.turn for t in run if t.burst == turn.message.id
                   or t.turn.turn_id in claimed]
        if len(members) > 1:
            turn.log.info("bursts.claimed", burst=turn.message.id, turns=len(members))
        return members

    @staticmethod
    async def _stored(turn: Turn, members: Sequence[InboxTurn]) -> list[StoredMessage]:
        """The burst's turns in the history, in their order, as their author left them
        (a turn deleted meanwhile is dropped)."""
        stored = [await turn.actions.record(m.message) for m in members]
        return [m for m in stored if m is not None]

    # -- interrupt -------------------------------------------------------------------------

    async def _interruptible(self, inbox: BurstInbox, turn: Turn, members: list[InboxTurn],
                             recorded: list[StoredMessage], call_next: Next
                             ) -> list[AgentResult]:
        """The answer to the burst, answered again with the author's new turns each time one
        comes while the agent answers (`members` grows with them). The new turns are claimed
        before the answer is stopped, so a crash from then on answers them with the burst;
        when the model had already finished, its reply goes out and the agents answer again
        for the new turns alone (they are in the burst: nothing else would answer them)."""
        conversation_id = turn.message.conversation_id
        onward = replace(turn, message=recorded[-1])
        results: list[AgentResult] = []
        while True:
            answering = asyncio.ensure_future(call_next(onward))
            watching = asyncio.ensure_future(self._newcomers(inbox, turn))
            try:
                await asyncio.wait({answering, watching}, return_when=asyncio.FIRST_COMPLETED)
                if answering.done():
                    return [*results, *answering.result()]
                added = await self._join(inbox, turn, members, await inbox.open_turns_timed(
                    conversation_id))
                if self.writing.writing(conversation_id):
                    answering.cancel(INTERRUPTED)
                try:
                    results.extend(await answering)  # finished before it could be stopped
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if not answering.cancelled() or (task is not None and task.cancelling()):
                        raise
            finally:
                for running in (answering, watching):
                    running.cancel()
                await asyncio.gather(answering, watching, return_exceptions=True)
            added += await self._join(inbox, turn, members, await self._gathered(
                inbox, turn, await inbox.open_turns_timed(conversation_id)))
            turn.log.info("bursts.interrupted", burst=turn.message.id, added=len(added))
            stored = await self._stored(turn, added)
            if stored:
                onward = replace(onward, message=stored[-1])

    async def _join(self, inbox: BurstInbox, turn: Turn, members: list[InboxTurn],
                    view: Sequence[TimedTurn]) -> list[InboxTurn]:
        """The author's new turns in `view`, claimed for the burst and added to `members`."""
        run, _ = self._run(view, turn.message)
        known = {m.turn_id for m in members}
        added = [m for m in await self._claim(inbox, turn, run) if m.turn_id not in known]
        members.extend(added)
        return added

    async def _newcomers(self, inbox: BurstInbox, turn: Turn) -> None:
        """Returns once the leader's author has sent a turn not yet in the burst."""
        while True:
            await asyncio.sleep(self.poll)
            view = await inbox.open_turns_timed(turn.message.conversation_id)
            run, _ = self._run(view, turn.message)
            if any(t.burst is None for t in run):
                return
