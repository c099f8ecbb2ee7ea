"""`GET /api/events`: one visitor's conversation as Server-Sent Events.

Why SSE and not a WebSocket: the reply stream flows one way (the browser sends with plain
`POST`s); SSE is plain HTTP, so every reverse proxy, load balancer and corporate proxy passes it
without an upgrade; and `EventSource` reconnects by itself, sending the id of the last event it
read (`Last-Event-ID`), which is exactly what resuming needs.

A stream sends, in order:
1. `retry: 1000` (reconnect after a second);
2. the stored turns after `Last-Event-ID` (or `?after=`), or the last `history_turns` of them
   on a fresh page; each a `turn` event whose SSE `id` is its sequence in the history;
3. the replies being written now (`replies.ReplyBoard`), each as its whole current value;
4. the feedback buttons offered under recent replies, each a `feedback` event;
5. `ready`, then whatever happens next: `turn` for each turn stored, `status`/`draft`/`posted`/
   `closed` for replies being written, `feedback` for buttons offered, `removed` for turns
   deleted.
A visitor's press of a feedback button (`/feedback up|down ID`, sent as a message) is a turn
of its own, sent as a `pressed` event instead of a `turn`: the widget shows it as the button's
pressed state (a reloaded page too, from the stored presses), and the command's answer, a
turn, says it was kept.
The browser keys every message by its id, so a turn heard twice (as the stream joins, say) is
shown once, and a stored reply replaces the draft of the same id. A comment line every
`PING_SECONDS` keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from aiohttp import web

from threadline.channels.base import FEEDBACK_COMMAND as FEEDBACK
from threadline.channels.web.replies import FeedbackOffer, ReplyBoard, ReplyEvent
from threadline.channels.web.visitors import Visitor
from threadline.errors import StoreError
from threadline.history.changes import HistoryChange
from threadline.history.files import files_of
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore

log = structlog.get_logger("threadline.channels.web")
PING_SECONDS = 15.0
TYPED = "typed"  # `metadata.extra` key: the words the visitor typed, without the files' lines


def _last_seen(request: web.Request) -> int | None:
    """The sequence of the last turn this browser read, if it says."""
    for said in (request.headers.get("Last-Event-ID"), request.query.get("after")):
        if said and said.isdigit():
            return int(said)
    return None


def turn_json(turn: StoredMessage) -> dict[str, Any]:
    """A stored turn as the widget shows it: who, the words typed, the files it brought."""
    kind = turn.participant.kind
    return {
        "id": turn.id, "seq": turn.sequence,
        "from": "visitor" if kind == "user" else "agent",
        "name": turn.participant.display_name or turn.participant.id,
        "text": turn.metadata.extra.get(TYPED, turn.content) if kind == "user" else (
            turn.content),
        "files": [{"name": f.name, "kind": f.kind, "note": f.note,
                   "url": f"/api/files/{f.sha256}" if f.kept else None}
                  for f in files_of(turn.metadata.extra)],
        "at": turn.timestamp.isoformat()}


def _pressed(turn: StoredMessage) -> str | None:
    """The button command of a visitor's feedback press (`/feedback down ID`, any reason
    typed after it left out), else None."""
    words = turn.content.split()
    if turn.participant.kind != "user" or len(words) < 3 or words[0] != f"/{FEEDBACK}":
        return None
    return " ".join(words[:3])


def _shown(turn: StoredMessage) -> bool:
    return turn.participant.kind in ("user", "agent") and not turn.metadata.is_summary


def _event(kind: str, data: Mapping[str, Any], *, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"{head}event: {kind}\ndata: {body}\n\n".encode()


class ConversationStream:
    """One browser's stream of one visitor's conversation (see the module docstring)."""

    def __init__(self, *, visitor: Visitor, history: ConversationStore, board: ReplyBoard,
                 history_turns: int) -> None:
        self.conversation_id = visitor.conversation_id
        self.history = history
        self.board = board
        self.history_turns = history_turns
        self._sent: dict[str, dict[str, Any]] = {}  # turn id -> as sent
        self._last_seq = 0

    async def serve(self, request: web.Request, headers: Mapping[str, str]
                    ) -> web.StreamResponse:
        queue = self.board.listen(self.conversation_id)  # before reading: nothing falls between
        response = web.StreamResponse(headers={
            **headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no"})
        try:
            await response.prepare(request)
            await response.write(b"retry: 1000\n\n")
            await self._send_turns(response, await self._missed(_last_seen(request)))
            for reply in self.board.current(self.conversation_id):
                await response.write(_event(reply.kind, reply.as_json()))
            for offer in self.board.offers(self.conversation_id):
                await response.write(_event("feedback", offer.as_json()))
            await response.write(_event("ready", {"last": self._last_seq}))
            while True:
                try:
                    async with asyncio.timeout(PING_SECONDS):  # not wait_for: waiting.py
                        item = await queue.get()
                except TimeoutError:
                    await response.write(b": ping\n\n")
                    continue
                if item is None:
                    break
                await self._send(response, item)
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the browser left (it reconnects), or the server stops
        except StoreError as exc:  # the browser reconnects and reads what it missed
            log.warning("web.stream_ended", conversation_id=self.conversation_id,
                        error=str(exc))
        finally:
            self.board.leave(self.conversation_id, queue)
        return response

    async def _missed(self, after: int | None) -> list[StoredMessage]:
        """The turns this browser has not read: the recent ones on a fresh page; after a
        reconnect those after `after`, the recent ones it has counted as sent (so a turn
        written again unchanged, as a retaken turn is, is not sent twice)."""
        recent = await self.history.get(self.conversation_id, limit=self.history_turns)
        if after is None:
            return recent
        self._last_seq = after
        for turn in recent:
            if (turn.sequence or 0) <= after:
                self._sent[turn.id] = turn_json(turn)
        if len(recent) == self.history_turns and (recent[0].sequence or 0) > after:
            # it may have missed more than the recent turns
            return await self.history.get(self.conversation_id, after_sequence=after)
        return [turn for turn in recent if (turn.sequence or 0) > after]

    async def _send(self, response: web.StreamResponse,
                    item: ReplyEvent | FeedbackOffer | HistoryChange) -> None:
        if isinstance(item, ReplyEvent):
            await response.write(_event(item.kind, item.as_json()))
        elif isinstance(item, FeedbackOffer):
            await response.write(_event("feedback", item.as_json()))
        elif item.kind == "delete":
            await response.write(_event("removed", {"ids": list(item.message_ids)}))
        else:
            turns = await self.history.get_by_ids(self.conversation_id, item.message_ids)
            await self._send_turns(response, turns)

    async def _send_turns(self, response: web.StreamResponse, turns: Iterable[StoredMessage]
                          ) -> None:
        """Each turn not yet sent as it reads now (an edited one again, changed)."""
        for turn in turns:
            shown, pressed = turn_json(turn), _pressed(turn)
            if not _shown(turn) or self._sent.get(turn.id) == shown:
                continue
            self._sent[turn.id] = shown
            self._last_seq = max(self._last_seq, turn.sequence or 0)
            if pressed is not None:  # shown as the button's state, not as a message
                await response.write(_event("pressed", {"command": pressed},
                                            event_id=self._last_seq))
            else:
                await response.write(_event("turn", shown, event_id=self._last_seq))
