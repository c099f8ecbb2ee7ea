"""The recall block an agent keeps showing in a conversation, so the prompt cache serves it.

A fresh recall block every turn is a block the model's prompt cache has never seen, sitting in
front of the newest turns, so every turn pays for all of it again (bench/prompt_cache.py: 47% of
the input read from the cache with recall on, 77% with it off). Instead an agent keeps the
block it made at one turn: the same bytes, at the same place in the history (just before that
turn), where a cache breakpoint holds it. What this turn's search finds beyond it goes in a
small fresh block with the newest turn, best hits first.

The kept block stands as long as the turn it stands before is in the prompt: it is replaced
when that turn leaves (the prefix before it changed anyway, so a new block costs the cache
nothing more), or when it no longer fits. It is not replaced when the talk moves on: replacing
it rewrites every cached byte after it, and a chat's subject moves on most turns (LoCoMo, three
agents in turn: consecutive blocks of an agent share a median 4% of their hits). What the new
subject needs comes in the fresh block. So a new kept block takes all the room recall has but a
fresh share (`1 - KEPT_SHARE` of recall's steady share of the budget), and the fresh block takes
what the kept block leaves: the bytes new on every turn stay few, and recall as a whole shows as
much as before (bench/prompt_cache.py, steady chat with recall on: 70.5% of the input from the
cache, 71.2% with a 3/4 share before recall searched summarized turns, 52.2% when the block was
replaced as the subject moved and the fresh block filled the room; bench/recall.py, an agent
keeping its block: 84.3% of LoCoMo's evidence, 84.4% with a fresh block alone).

A kept block never shows stale or hidden text: every turn in it must still pass the
assembler's filters (not forgotten, not in the prompt already),
one found again by this turn's search must carry the same speaker and text, and an edit or a
deletion of one of its turns heard from the store (`ConversationStore.subscribe`: this process
on SQLite, every process on PostgreSQL) drops it. Kept in this process only, for the
`max_conversations` most recently answered conversations: another replica makes its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from threadline.history.changes import HistoryChange
from threadline.history.model import StoredMessage
from threadline.history.projection import SpeakerLabels
from threadline.history.prompt import PromptMessage
from threadline.history.recall import recall_block, render_recall
from threadline.history.store import ConversationStore, SearchWindow
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter

# The share of recall's steady room a new kept block leaves to the fresh block is 1 - this.
KEPT_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class KeptBlock:
    """A kept recall block: its windows and the turn it was made for."""

    windows: tuple[SearchWindow, ...]
    anchor_id: str

    @property
    def turn_ids(self) -> set[str]:
        return {m.id for w in self.windows for m in w.messages}


@dataclass(frozen=True, slots=True)
class RecallAsk:
    """What one assembly gives recall: what its search `found`, the `room` recall has now and
    on every turn (`steady_room`, its share of the budget), whether a turn may be shown
    (`usable`: not in the prompt, not forgotten), the answered turn (`made_for`) and the
    earlier turns of the prompt (`earlier_ids`, oldest first), before one of which a kept
    block stands."""

    found: Sequence[SearchWindow]
    room: int
    steady_room: int
    usable: Callable[[StoredMessage], bool]
    counter: TokenCounter
    labels: SpeakerLabels
    made_for: StoredMessage
    earlier_ids: Sequence[str]

    def block(self, room: int, *, leaving: Collection[str] = ()
              ) -> tuple[PromptMessage | None, list[SearchWindow]]:
        """The best of what was found within `room` tokens, less the turns `leaving` out."""
        return recall_block(list(self.found), room=room, in_prompt=leaving,
                            usable=self.usable, counter=self.counter,
                            labels=self.labels)


@dataclass(frozen=True, slots=True)
class RecallBlocks:
    """What recall shows this turn: the kept block, standing before `at` of the earlier
    turns (all of them when made now), and the fresh one that goes with the newest turn."""

    kept_message: PromptMessage | None
    fresh_message: PromptMessage | None
    shown: tuple[SearchWindow, ...]
    at: int


def show_recall(kept_recall: KeptRecall | None, store: ConversationStore, conversation_id: str,
                agent_id: str, ask: RecallAsk) -> RecallBlocks:
    """What recall shows this turn: with `kept_recall`, its blocks (`KeptRecall.blocks`);
    without, one fresh block with the newest turn."""
    if kept_recall is not None:
        kept_recall.watch(store)
        return kept_recall.blocks(conversation_id, agent_id, ask)
    block, shown = ask.block(ask.room)
    return RecallBlocks(None, block, tuple(shown), at=len(ask.earlier_ids))


class KeptRecall:
    """Each (conversation, agent)'s kept recall block, and the blocks a turn shows."""

    def __init__(self, *, max_conversations: int = 4096) -> None:
        self._max = max_conversations
        self._blocks: OrderedDict[tuple[str, str], KeptBlock] = OrderedDict()
        self._watched: set[int] = set()

    def watch(self, store: ConversationStore) -> None:
        """Hear `store`'s edits and deletions (once per store): a kept block showing a turn
        that changed is dropped."""
        if id(store) not in self._watched:
            self._watched.add(id(store))
            store.subscribe(self._heard)

    def _heard(self, change: HistoryChange) -> None:
        if change.kind == "append":
            return
        changed = set(change.message_ids)
        for key in [k for k, block in self._blocks.items()
                    if k[0] == change.conversation_id and changed & block.turn_ids]:
            del self._blocks[key]

    def blocks(self, conversation_id: str, agent_id: str, ask: RecallAsk) -> RecallBlocks:
        """The kept block (standing, or made now and kept from now on: an assembly that asks
        more than once keeps the last block it made) and a fresh block in the room it leaves.

        A new kept block takes `ask.room` less the fresh block's share (the module docstring).
        """
        key = (conversation_id, agent_id)
        kept = self._standing(self._blocks.get(key), ask)
        message = render_recall(kept.windows, labels=ask.labels) if kept else None
        if kept is None or message is None or _cost(message, ask.counter) > ask.room:
            fresh_share = int(min(ask.room, ask.steady_room) * (1 - KEPT_SHARE))
            message, windows = ask.block(ask.room - fresh_share)
            if message is None:
                return RecallBlocks(None, None, (), at=len(ask.earlier_ids))
            kept = KeptBlock(windows=tuple(windows), anchor_id=ask.made_for.id)
            self._remember(key, kept)
        fresh_message, fresh = ask.block(ask.room - _cost(message, ask.counter),
                                         leaving=kept.turn_ids)
        at = (ask.earlier_ids.index(kept.anchor_id) if kept.anchor_id in ask.earlier_ids
              else len(ask.earlier_ids))
        return RecallBlocks(replace(message, cache_point=True), fresh_message,
                            (*kept.windows, *fresh), at=at)

    def _remember(self, key: tuple[str, str], block: KeptBlock) -> None:
        self._blocks[key] = block
        self._blocks.move_to_end(key)
        while len(self._blocks) > self._max:
            self._blocks.popitem(last=False)

    def _standing(self, kept: KeptBlock | None, ask: RecallAsk) -> KeptBlock | None:
        """`kept` when its turn is still in the prompt (else the prefix before it changed
        anyway) and all of it is current."""
        if kept is None or kept.anchor_id not in ask.earlier_ids:
            return None
        current = {m.id: m for w in ask.found for m in w.messages}
        for window in kept.windows:
            for message in window.messages:
                again = current.get(message.id, message)
                if (not ask.usable(message) or again.content != message.content
                        or again.participant != message.participant):
                    return None
        return kept


def _cost(message: PromptMessage, counter: TokenCounter) -> int:
    return PER_MESSAGE_OVERHEAD + counter.count(message.content)
