"""The Matrix `/sync` loop, and when a sync position counts as taken.

The homeserver forgets nothing; the bot says where to read from with `since`. So the position
(`next_batch`) is the acknowledgement, and it is kept (`SyncTokens`, by the backend) only once
every event of its batch was taken: for a message, once `on_message` returned (the turn is in
the inbox). A batch is taken one event at a time, in order; when one raises
`TurnNotRecordedError` the batch stops there, the position is not kept, and after a pause the
same batch is asked for again: the events taken before it come again and the receiver drops
them by turn id. After a kill -9 the same holds: the restarted bot asks from the last position
kept. Any other failure of one event is logged and counted (`skip`), and the batch goes on:
one bad event never stalls the room.

The first run of an account (no position kept) asks once without `since` and takes only the
invites: the rooms' earlier history is not answered. Each later sync is a long poll of
`timeout_ms`; errors (the homeserver down, 5xx, a revoked token) are logged and retried with a
pause growing to 30 s, and the loop runs under `SupervisedListener`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from nio import AsyncClient, SyncError, SyncResponse

from threadline.channels.matrix.sync_tokens import SyncTokens
from threadline.channels.supervise import SupervisedListener
from threadline.errors import TurnNotRecordedError

EventTaker = Callable[[str, Mapping[str, Any]], Coroutine[Any, Any, None]]
InviteTaker = Callable[[str, Sequence[Mapping[str, Any]]], Awaitable[None]]
SkipHandler = Callable[[object, BaseException | str], None]

_FIRST_PAUSE = 1.0
_MAX_PAUSE = 30.0
_STOP_GRACE_SECONDS = 10.0
# The first sync of an account reads no history: only one event a room, and it is not taken.
_FIRST_SYNC_FILTER = {"room": {"timeline": {"limit": 1}}}


def _pause_after(previous: float) -> float:
    return min(_MAX_PAUSE, previous * 2) if previous else _FIRST_PAUSE


class SyncLoop:
    """Long-polls `/sync` and keeps the position once its batch was taken (module docstring)."""

    def __init__(self, *, client: AsyncClient, tokens: SyncTokens, account: str,
                 take: EventTaker, invited: InviteTaker, skip: SkipHandler, log: Any,
                 channel: str, timeout_ms: int) -> None:
        self._client = client
        self._tokens = tokens
        self._account = account
        self._take = take
        self._invited = invited
        self._skip = skip
        self._log = log
        self._timeout_ms = timeout_ms
        self.position: str | None = None
        self.failure: str | None = None  # why the last sync failed, while it keeps failing
        self._stopping = asyncio.Event()
        self.listener = SupervisedListener(channel=channel, listen=self._poll)

    async def start(self) -> None:
        """Read the kept position (or take the present, on an account's first run); poll."""
        self.position = await self._tokens.position(self._account)
        if self.position is None:
            first = await self._client.sync(timeout=0, sync_filter=_FIRST_SYNC_FILTER)
            if isinstance(first, SyncError):
                raise _SyncRefused(str(first))
            await self._take_invites(first)
            await self._tokens.keep(self._account, first.next_batch)
            self.position = first.next_batch
            self._log.info("matrix.first_sync", position=self.position,
                           outcome="earlier messages are not answered")
        self._stopping.clear()
        self.listener.start()

    async def stop(self) -> None:
        """Finish the event in hand (up to 10 s); the position kept is that of the last batch
        taken whole."""
        self._stopping.set()
        await self.listener.stop(grace=_STOP_GRACE_SECONDS)

    async def _poll(self) -> None:
        pause = 0.0
        while not self._stopping.is_set():
            try:
                batch = await self._next_batch()
                if batch is None:
                    return
                await self._take_batch(batch)
            except TurnNotRecordedError as error:
                self._log.warning("matrix.batch_not_recorded", position=self.position,
                                  error=str(error),
                                  outcome="position not kept; the batch is asked for again")
                pause = _pause_after(pause)
            except _SyncRefused as error:
                self.failure = f"the homeserver refused /sync: {error}"
                self._log.warning("matrix.sync_failed", error=str(error), retry_in=pause)
                pause = _pause_after(pause)
            else:
                self.failure = None
                pause = 0.0
            if pause:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), pause)

    async def _next_batch(self) -> SyncResponse | None:
        """The events after the position, or None once `stop` was called."""
        poll = asyncio.ensure_future(self._client.sync(timeout=self._timeout_ms,
                                                       since=self.position))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not poll.done():
            poll.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await poll
            return None
        try:
            response = poll.result()
        except Exception as error:  # no connection, or an answer nio could not read
            raise _SyncRefused(f"{type(error).__name__}: {error}") from error
        if isinstance(response, SyncError):
            raise _SyncRefused(str(response))
        return response

    async def _take_batch(self, batch: SyncResponse) -> None:
        await self._take_invites(batch)
        for room_id, room in batch.rooms.join.items():
            for event in room.timeline.events:
                source = getattr(event, "source", None)
                if self._stopping.is_set():
                    return  # the position is not kept: this batch comes again
                await self._take_one(room_id, source)
        await self._tokens.keep(self._account, batch.next_batch)
        self.position = batch.next_batch

    async def _take_one(self, room_id: str, source: object) -> None:
        event_id = source.get("event_id") if isinstance(source, dict) else None
        try:
            if not isinstance(source, dict):
                raise ValueError(f"not an event object: {source!r:.200}")
            # A task per event, as a request would have: what the receiver binds to the
            # current task (log context, "in flight" tracking) ends with the event.
            await asyncio.create_task(self._take(room_id, source))
        except TurnNotRecordedError:
            raise
        except Exception as error:
            self._skip(event_id, error)

    async def _take_invites(self, batch: SyncResponse) -> None:
        for room_id, invite in batch.rooms.invite.items():
            try:
                events = [getattr(e, "source", e) for e in invite.invite_state]
                await self._invited(room_id, events)
            except Exception as error:
                self._skip(f"invite:{room_id}", error)


class _SyncRefused(Exception):
    """A `/sync` that did not answer events: the homeserver's error, or no connection."""
