"""Edits and deletions of a person's message, wherever its turn stands.

A turn not answered yet is answered as edited, or not at all once deleted: the inbox row is
its truth until the history holds it (the worker that took it reads it back once it has stored
it: `TurnPipeline.record`). A stored turn is edited in, or removed from, the history; with
`answer_edits` on, an edited one waits in the inbox once more, marked with its edit (so its
replies are new turns: `reply_turn_id`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import structlog

from threadline.errors import StoreError
from threadline.history.inbox import TurnInbox, TurnState
from threadline.history.model import storable_text
from threadline.history.store import ConversationStore
from threadline.people.link_codes import mask_link_codes
from threadline.turn import EDITED

log = structlog.get_logger("threadline.pipeline")


class TurnEdits:
    """Applies edits and deletions; see the module docstring."""

    def __init__(self, *, inbox: TurnInbox, store: ConversationStore,
                 wake: Callable[[str], None], cancelled: Callable[[str], None],
                 answer_edits: bool = False) -> None:
        self.inbox = inbox
        self.store = store
        self.wake = wake
        self.cancelled = cancelled  # a waiting turn that will not be answered
        self.answer_edits = answer_edits

    async def edit(self, conversation_id: str, turn_id: str, content: str) -> None:
        """A person edited a message (see the module docstring)."""
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
                self.cancelled(turn_id)  # nobody took it; a worker that did resolves it
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
