"""Automatic recall: earlier turns that answer the newest message, put into the prompt.

The conversation is searched with what the turn being answered asks (never finding that turn
itself, nor anything stored after it, nor searching for the agent it opens by addressing); the
best hits come with the turns around them (two each side: the question before an answer, what
follows it) as one clearly marked system block. Recall fills the room the kept turns leave, so
its number of hits follows from that room, not from a fixed share; the block is sized by its
formatted text and trimmed window by window, worst first. So a fact reaches the model even when
it does not call the search tool, and even in addressed-only mode, where most of a busy channel
is filtered out. The block is a pure function of the stored turns, stable byte for byte for
prompt caching.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import date

from threadline.history.addressing import without_address
from threadline.history.meaning import search_windows
from threadline.history.model import StoredMessage
from threadline.history.projection import SpeakerLabels
from threadline.history.prompt import PromptMessage
from threadline.history.search import (
    ENGLISH_STOP_WORDS,
    SearchQuery,
    format_windows,
    trim_window,
)
from threadline.history.store import ConversationStore, SearchWindow
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter

RECALL_HEADER = "Earlier in this conversation (found by search, with the turns around it):"
# Turns shown before and after each hit.
# Two each side: on the development half of LoCoMo (bench/recall.py --quick) a question's
# evidence often sits around its best hit. Within the same tokens, (2, 2) reached 83.5% of it,
# (2, 3) 82.9%, (2, 4) 82.4%, (1, 3) 82.2%; (1, 2) 81.2% and (1, 1) 79.4% (measured before
# the address left the query, which then gave (2, 3) 82.2%).
RECALL_CONTEXT = (2, 2)
# The room per hit asked for: the store is asked for room // TOKENS_PER_WINDOW hits (hits next
# to each other share a window, so a window costs more). On the development half of LoCoMo
# 60-70 reached 84.3-84.6% of the evidence, 80 83.5%, 50-55 83.2-83.7%, 100 82.8%.
TOKENS_PER_WINDOW = 65
MAX_RECALL_HITS = 60
SEPARATOR_TOKENS = 2  # "\n---\n" between windows
DATE_LINE_TOKENS = 10  # "[Fri 2024-03-01]" and its line break


def worth_recalling(text: str) -> bool:
    """Whether a message has any word beyond stop words to search with ("ok thanks" has not)."""
    return worth_searching(SearchQuery.parse(text[:2000]))


def worth_searching(query: SearchQuery) -> bool:
    """`worth_recalling` of a text already parsed (a search that ranks it parses it once)."""
    return any(t not in ENGLISH_STOP_WORDS for t in query.terms) or bool(query.trigrams)


async def find_recall(
    store: ConversationStore,
    conversation_id: str,
    query_text: str,
    *,
    room: int,
    min_hits: int,
    exclude_ids: Collection[str],
    through_sequence: int | None,
    by_meaning: bool = True,
) -> list[SearchWindow]:
    """Windows for the turn being answered, best first, as many as `room` tokens may hold.

    With `by_meaning`, turns near the question in meaning are fused in (`history.meaning`).
    The mentions the turn opens with are not searched for: they say whom it asks, not what.
    """
    query_text = without_address(query_text)
    if room <= 0 or not worth_recalling(query_text):
        return []
    hits = min(max(room // TOKENS_PER_WINDOW, min_hits), MAX_RECALL_HITS)
    return await search_windows(store, conversation_id, query_text[:2000], limit=hits,
                                context=RECALL_CONTEXT, token_cap=room, exclude_ids=exclude_ids,
                                through_sequence=through_sequence, by_meaning=by_meaning)


def recall_block(
    windows: list[SearchWindow],
    *,
    room: int,
    in_prompt: Collection[str],
    usable: Callable[[StoredMessage], bool],
    counter: TokenCounter,
    labels: SpeakerLabels | None = None,
) -> tuple[PromptMessage | None, list[SearchWindow]]:
    """The recall system block within `room` tokens, and the windows it shows.

    Turns the prompt already has, and those `usable` refuses, are left out. Windows
    are taken best first while their formatted size fits (estimated from the stored counts,
    then the block is counted exactly and the worst window dropped until it fits); the first
    that does not fit whole is trimmed around its best hit. The block shows them in
    conversation order.
    """
    chosen: list[SearchWindow] = []
    days: set[date] = set()  # a day is dated once in the block
    used = PER_MESSAGE_OVERHEAD + counter.count(RECALL_HEADER) + 1
    for window in only(windows, lambda m: m.id not in in_prompt and usable(m)):
        cost = formatted_size(window, days)
        if used + cost > room:
            trimmed = trim_window(window, room - used - (cost - window.token_count))
            if trimmed is None or used + formatted_size(trimmed, days) > room:
                continue
            window, cost = trimmed, formatted_size(trimmed, days)
        chosen.append(window)
        days.update(m.timestamp.date() for m in window.messages)
        used += cost
    while chosen:
        shown = sorted(chosen, key=lambda w: w.messages[0].sequence or 0)
        block = render_recall(shown, labels=labels)
        if PER_MESSAGE_OVERHEAD + counter.count(block.content) <= room:
            return block, shown
        chosen.pop()  # the estimate was short: the worst-ranked window goes
    return None, []


def render_recall(shown: Sequence[SearchWindow], *, labels: SpeakerLabels | None = None
                  ) -> PromptMessage:
    """The recall block showing `shown` (in conversation order)."""
    return PromptMessage("system", f"{RECALL_HEADER}\n{format_windows(shown, labels=labels)}")


def formatted_size(window: SearchWindow, dated: Collection[date] = ()) -> int:
    """About the tokens a window costs as formatted, from its turns' stored counts.

    A stored count includes PER_MESSAGE_OVERHEAD, which a line of the block does not pay
    (it pays ": " and a line break instead); each day not yet `dated` adds a date line.
    """
    days = len({m.timestamp.date() for m in window.messages} - set(dated))
    return (window.token_count - (PER_MESSAGE_OVERHEAD - 2) * len(window.messages)
            + DATE_LINE_TOKENS * days + SEPARATOR_TOKENS)


def only(windows: list[SearchWindow], keep: Callable[[StoredMessage], bool]
         ) -> list[SearchWindow]:
    """The windows with only the turns `keep` accepts; a window left without a hit goes."""
    kept: list[SearchWindow] = []
    for window in windows:
        members = tuple(m for m in window.messages if keep(m))
        present = {m.id for m in members}
        hits = tuple(h for h in window.hit_ids if h in present)
        if hits:
            kept.append(SearchWindow(hits, members))
    return kept
