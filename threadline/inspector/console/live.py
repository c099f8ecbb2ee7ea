"""New turns of one conversation as they are stored, for the console: the history's change
notifications (`ConversationStore.subscribe`) streamed to the browser.

`/conversation/live?id=...` streams HTML (each new turn a list item, rendered as it arrives:
pages load no script, so the stream itself is the update); `/api/conversation/live?id=...` is
Server-Sent Events with one JSON object per new turn. Each value is redacted before it is
escaped or encoded: escaped first, a secret holding `&` or `<` would no longer read as itself
and would cross in clear. A stream ends when the client leaves or the console shuts down.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

from aiohttp import web
from markupsafe import escape

from threadline.history.changes import HistoryChange
from threadline.history.model import StoredMessage
from threadline.history.store import ConversationStore
from threadline.inspector.redaction import Redactor

Queue = asyncio.Queue[HistoryChange | None]


class LiveTurns:
    """Open streams of one console, so shutting down ends them instead of waiting on them."""

    def __init__(self, *, store: ConversationStore, redactor: Redactor) -> None:
        self.store = store
        self.redactor = redactor
        self._streams: set[Queue] = set()

    async def close(self, app: web.Application | None = None) -> None:
        for queue in self._streams:
            queue.put_nowait(None)

    async def stream(self, request: web.Request, *, api: bool,
                     headers: Mapping[str, str]) -> web.StreamResponse:
        conversation_id = request.query.get("id", "")
        if not conversation_id:
            raise web.HTTPBadRequest(text="pass ?id=CONVERSATION_ID")
        queue: Queue = asyncio.Queue()
        self._streams.add(queue)
        unsubscribe = self.store.subscribe(queue.put_nowait, conversation_id=conversation_id)
        response = web.StreamResponse(headers={
            **headers, "Content-Type": "text/event-stream" if api else "text/html; charset=utf-8"})
        try:
            await response.prepare(request)
            if not api:
                shown = escape(self.redactor.text(conversation_id))
                await _write(response, f"<!doctype html><title>{shown} live</title>"
                             f"<h1>New turns of <code>{shown}</code></h1><ol>\n")
            while (change := await queue.get()) is not None:
                if change.kind != "append":
                    continue
                for turn in await self.store.get_by_ids(conversation_id, change.message_ids):
                    await _write(response, _event(turn, self.redactor) if api
                                 else _item(turn, self.redactor))
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the client left, or the server stops
        finally:
            unsubscribe()
            self._streams.discard(queue)
        return response



async def _write(response: web.StreamResponse, text: str) -> None:
    await response.write(text.encode("utf-8"))


def _event(turn: StoredMessage, redactor: Redactor) -> str:
    data = redactor.value({
        "id": turn.id, "sequence": turn.sequence, "speaker": turn.participant.display_name,
        "kind": turn.participant.kind, "content": turn.content,
        "timestamp": turn.timestamp.isoformat()})
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _item(turn: StoredMessage, redactor: Redactor) -> str:
    def shown(text: str) -> str:
        return escape(redactor.text(text))

    return (f"<li><strong>{shown(turn.participant.display_name)}</strong> "
            f"({shown(turn.participant.kind)}) #{turn.sequence}<pre>{shown(turn.content)}"
            "</pre></li>\n")
