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

Each sync's JSON is read here, one event at a time, rather than by nio's `SyncResponse`: that
parses a whole batch at once, and one event it cannot parse would fail every sync from that
position on, stalling the bot for good.

A room with more new events than a sync carries answers `limited` with a `prev_batch`; the
events in between are read back with `/messages` (from `prev_batch` back to our position) and
taken first, so a long downtime in a busy room still misses nothing.

The first run of an account (no position kept) asks once without `since` and takes only the
invites: the rooms' earlier history is not answered. Each later sync is a long poll of
`timeout_ms`; errors (the homeserver down, 5xx, a revoked token) are logged and retried with a
pause growing to 30 s, and the loop runs under `SupervisedListener`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from nio import AsyncClient

from threadline.channels.matrix.sync_tokens import SyncTokens
from threadline.channels.supervise import SupervisedListener
from threadline.errors import ChannelError, TurnNotRecordedError
from threadline.waiting import cancel_and_wait, set_within

EventTaker = Callable[[str, Mapping[str, Any]], Coroutine[Any, Any, None]]
InviteTaker = Callable[[str, Sequence[Mapping[str, Any]]], Awaitable[None]]
SkipHandler = Callable[[object, BaseException | str], None]

_FIRST_PAUSE = 1.0
_MAX_PAUSE = 30.0
_STOP_GRACE_SECONDS = 10.0
# The first sync of an account reads no history: only one event a room, and it is not taken.
_FIRST_SYNC_FILTER = json.dumps({"room": {"timeline": {"limit": 1}}})
# Later syncs: up to 100 events a room; a room with more says `limited`, and the gap is read
# back with /messages (at most _MAX_GAP_EVENTS of it, the rest is logged as skipped).
_SYNC_FILTER = json.dumps({"room": {"timeline": {"limit": 100}}})
_MAX_GAP_EVENTS = 5_000
# How much longer than the long poll a sync may take before it counts as failed.
_SYNC_GRACE_SECONDS = 15.0


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
            first = await self._sync({"filter": _FIRST_SYNC_FILTER, "timeout": "0"})
            await self._take_invites(first)
            self.position = _next_batch_of(first)
            await self._tokens.keep(self._account, self.position)
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
                self.failure = None  # the homeserver answered
                await self._take_batch(batch)
            except TurnNotRecordedError as error:
                self._log.warning("matrix.batch_not_recorded", position=self.position,
                                  error=str(error),
                                  outcome="position not kept; the batch is asked for again")
                pause = _pause_after(pause)
            except _SyncRefused as error:
                self.failure = f"the homeserver refused /sync: {error}"
                pause = _pause_after(pause)
                self._log.warning("matrix.sync_failed", error=str(error), retry_in=pause)
            else:
                pause = 0.0
            if pause:
                await set_within(self._stopping, pause)

    async def _next_batch(self) -> Mapping[str, Any] | None:
        """The events after the position, or None once `stop` was called."""
        query = {"timeout": str(self._timeout_ms), "filter": _SYNC_FILTER,
                 **({"since": self.position} if self.position else {})}
        poll = asyncio.ensure_future(self._sync(query))
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({poll, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not poll.done():
            with contextlib.suppress(Exception):
                await cancel_and_wait(poll)
            return None
        return poll.result()

    async def _sync(self, query: Mapping[str, str]) -> Mapping[str, Any]:
        """One `/sync` as JSON."""
        body = await self._get(f"/_matrix/client/v3/sync?{urlencode(query)}",
                               wait=int(query.get("timeout", "0")) / 1000 + _SYNC_GRACE_SECONDS)
        _next_batch_of(body)  # a batch without a position cannot be acknowledged
        return body

    async def _get(self, path: str, *, wait: float) -> Mapping[str, Any]:
        """A GET answered with a JSON object (the token in the header, never in the URL);
        `_SyncRefused` for anything else."""
        try:
            async with asyncio.timeout(wait):
                response = await self._client.send(
                    "GET", path, headers={"Authorization": f"Bearer {self._client.access_token}"},
                    timeout=wait)
                body = await response.json(content_type=None)
        except Exception as error:  # no connection, no answer in time, or not JSON
            raise _SyncRefused(f"{type(error).__name__}: {error}") from error
        if response.status != 200 or not isinstance(body, dict):
            code = body.get("errcode") if isinstance(body, dict) else None
            said = body.get("error") if isinstance(body, dict) else None
            raise _SyncRefused(f"HTTP {response.status} {code or ''} {said or ''}".strip())
        return body

    async def _take_batch(self, batch: Mapping[str, Any]) -> None:
        await self._take_invites(batch)
        for room_id, room in _section(batch, "join").items():
            for event in await self._room_events(room_id, room):
                if self._stopping.is_set():
                    return  # the position is not kept: this batch comes again
                await self._take_one(room_id, event)
        await self._tokens.keep(self._account, _next_batch_of(batch))
        self.position = _next_batch_of(batch)

    async def _room_events(self, room_id: str, room: object) -> list[object]:
        """A joined room's new events, oldest first, the gap of a limited timeline included."""
        timeline = room.get("timeline") if isinstance(room, dict) else None
        if not isinstance(timeline, dict):
            return []
        events = timeline.get("events")
        events = list(events) if isinstance(events, list) else []
        prev_batch = timeline.get("prev_batch")
        if timeline.get("limited") is True and isinstance(prev_batch, str) and self.position:
            events = await self._gap(room_id, prev_batch) + events
        return events

    async def _gap(self, room_id: str, prev_batch: str) -> list[object]:
        """The events a limited timeline left out, between our position and the batch, read
        back page by page (newest first) with /messages; returned oldest first."""
        found: list[object] = []
        start = prev_batch
        while len(found) < _MAX_GAP_EVENTS:
            query = urlencode({"dir": "b", "from": start, "to": self.position or "",
                               "limit": "100"})
            page = await self._get(f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}"
                                   f"/messages?{query}", wait=_SYNC_GRACE_SECONDS)
            chunk = page.get("chunk")
            found += chunk if isinstance(chunk, list) else []
            end = page.get("end")
            if not chunk or not isinstance(end, str) or end == start:
                break
            start = end
        else:
            self._log.warning("matrix.gap_cut", room_id=room_id, read=len(found),
                              outcome="older events of this gap are not answered")
        self._log.info("matrix.gap_read", room_id=room_id, events=len(found))
        return found[::-1]

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

    async def _take_invites(self, batch: Mapping[str, Any]) -> None:
        for room_id, invite in _section(batch, "invite").items():
            try:
                state = invite.get("invite_state") if isinstance(invite, dict) else None
                events = state.get("events") if isinstance(state, dict) else None
                await self._invited(room_id, [e for e in events or () if isinstance(e, dict)])
            except Exception as error:
                self._skip(f"invite:{room_id}", error)


def _section(batch: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`rooms.join` or `rooms.invite` of a sync, by room id (empty when malformed)."""
    rooms = batch.get("rooms")
    found = rooms.get(name) if isinstance(rooms, dict) else None
    return {k: v for k, v in found.items() if isinstance(k, str)} if isinstance(
        found, dict) else {}


def _next_batch_of(batch: Mapping[str, Any]) -> str:
    position = batch.get("next_batch")
    if not isinstance(position, str) or not position:
        raise _SyncRefused(f"the sync answer has no next_batch: {str(batch)[:200]}")
    return position


class _SyncRefused(ChannelError):
    """A `/sync` that did not answer events: the homeserver's error, or no connection."""
