"""Owning conversations: one process at a time answers a conversation's open turns, in order.

A conversation is woken when a turn of it is recorded (or found waiting by the scan); this
process then tries to hold it (`ConversationLock.try_hold`: an advisory lock on PostgreSQL, so
replicas take turns) and answers its open turns in arrival order until none is left. The
PostgreSQL lock keeps it a moment longer (`LINGER`, less than another process's
`SECOND_LOOK`), so the next turn of a lively chat costs no lock and unlock, and a turn another
process recorded meanwhile is still taken there at its second look. A process that dies
releases it (the server drops its connections and their locks), and whoever owns it next
answers what was left: the scan looks for conversations with turns waiting every
`scan_interval` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from threadline.errors import StoreError
from threadline.history.inbox import InboxTurn, TurnInbox
from threadline.locks import SECOND_LOOK, ConversationLock
from threadline.waiting import cancel_and_wait

log = structlog.get_logger("threadline.pipeline")


class ConversationOwners:
    """This process's owners of conversations; see the module docstring."""

    def __init__(self, *, inbox: TurnInbox, lock: ConversationLock,
                 answer: Callable[[InboxTurn], Awaitable[bool]],
                 scan_interval: float = 1.0) -> None:
        self.inbox = inbox
        self.lock = lock
        self.answer = answer
        self.scan_interval = scan_interval
        self.started = False
        self.closing = False
        self._wanted: set[str] = set()
        self._owners: dict[str, asyncio.Task[None]] = {}
        self._scanner: asyncio.Task[None] | None = None
        # Conversations answered at once in this process (each held one costs the lock a
        # database connection on PostgreSQL); the others wait their turn here.
        self._slots = asyncio.Semaphore(lock.concurrency)

    @property
    def owned(self) -> frozenset[str]:
        """The conversations this process is owning (or trying to) right now."""
        return frozenset(self._owners)

    def wake(self, conversation_id: str) -> None:
        """Make sure this process tries to own the conversation and answer its open turns."""
        if self.closing:
            return  # recorded; answered after the restart
        self._wanted.add(conversation_id)
        if self.started and conversation_id not in self._owners:
            self._owners[conversation_id] = asyncio.get_running_loop().create_task(
                self._own(conversation_id), name=f"threadline-turns-{conversation_id}")

    async def scan(self) -> None:
        """Wake every conversation with turns still to answer (after a crash, or left by a
        process that died)."""
        for conversation_id in await self.inbox.conversations_waiting(limit=1000):
            if conversation_id not in self._owners:
                log.info("pipeline.open_turns_found", conversation_id=conversation_id)
                self.wake(conversation_id)

    def start(self) -> None:
        """Own what was woken meanwhile, and scan for turns left from before."""
        self.closing = False
        self.started = True
        for conversation_id in list(self._wanted):
            self.wake(conversation_id)
        if self._scanner is None:
            self._scanner = asyncio.get_running_loop().create_task(self._scan_forever())

    async def stop(self, *, drain_timeout: float) -> None:
        """Finish the turns being answered (for at most `drain_timeout` s); take no new ones."""
        self.closing = True
        self.started = False
        if self._scanner is not None:
            await cancel_and_wait(self._scanner)
            self._scanner = None
        owners = [t for t in self._owners.values() if t is not asyncio.current_task()]
        if owners:
            _, late = await asyncio.wait(owners, timeout=drain_timeout)
            if late:
                log.warning("pipeline.shutdown_timeout", in_flight=len(late),
                            drain_timeout=drain_timeout)

    async def _own(self, conversation_id: str) -> None:
        """Answer the conversation's open turns while it is wanted and ours to own."""
        second_look = True
        try:
            while conversation_id in self._wanted and not self.closing:
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
        """Answer the open turns, oldest first, and those recorded meanwhile (by any process),
        each taken as the next (`TurnInbox.take_next`): the last one's end says whether any
        is left (`TurnInbox.finish`), so a conversation whose turns are all answered is not
        read once more to find none. A turn recorded after that end wakes the conversation
        again (this process), or is taken at the recording process's second look."""
        while not self.closing:
            turn = await self.inbox.take_next(conversation_id)
            if turn is None or not await self.answer(turn):
                return

    async def _scan_forever(self) -> None:
        while True:
            try:
                await self.scan()
            except StoreError as exc:
                log.warning("pipeline.scan_failed", error=str(exc))
            await asyncio.sleep(self.scan_interval)
