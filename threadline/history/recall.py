"""Automatic recall: earlier turns that answer the newest message, put into the prompt.

The conversation is searched with the turn being answered (never finding that turn itself, nor
anything stored after it); the best hits come with the turns around them (one before, two
after: an answer usually follows a question) as one clearly marked system block. Recall fills
the room the kept turns leave, so its number of hits follows from that room, not from a fixed
share; the block is sized by its formatted text and trimmed window by window, worst first. So
a fact reaches the model even when it does not call the search tool, and even in addressed-only
mode, where most of a busy channel is filtered out. The block is a pure function of the stored
turns, stable byte for byte for prompt caching.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptMessage
from threadline.history.search import (
    ENGLISH_STOP_WORDS,
    SearchQuery,
    format_window,
    format_windows,
    trim_window,
)
from threadline.history.store import ConversationStore, SearchWindow
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter

RECALL_HEADER = "Earlier in this conversation (found by search, with the turns around it):"
# Turns shown before and after each hit.
RECALL_CONTEXT = (1, 2)
# About what one window of RECALL_CONTEXT costs, to ask the store for as many hits as fit.
TOKENS_PER_WINDOW = 60
MAX_RECALL_HITS = 60
SEPARATOR_TOKENS = 2  # "\n---\n" between windows


def worth_recalling(text: str) -> bool:
    """Whether a message has any word beyond stop words to search with ("ok thanks" has not)."""
    parsed = SearchQuery.parse(text[:2000])
    return any(t not in ENGLISH_STOP_WORDS for t in parsed.terms) or bool(parsed.trigrams)


async def find_recall(
    store: ConversationStore,
    conversation_id: str,
    query_text: str,
    *,
    room: int,
    min_hits: int,
    exclude_ids: Collection[str],
    through_sequence: int | None,
) -> list[SearchWindow]:
    """Windows for the turn being answered, best first, as many as `room` tokens may hold."""
    if room <= 0 or not worth_recalling(query_text):
        return []
    hits = min(max(room // TOKENS_PER_WINDOW, min_hits), MAX_RECALL_HITS)
    return await store.search_context(conversation_id, query_text[:2000], limit=hits,
                                      context=RECALL_CONTEXT, token_cap=room,
                                      exclude_ids=exclude_ids, through_sequence=through_sequence)


def recall_block(
    windows: list[SearchWindow],
    *,
    room: int,
    in_prompt: Collection[str],
    summarized: Callable[[StoredMessage], bool],
    counter: TokenCounter,
) -> tuple[PromptMessage | None, list[str]]:
    """The recall system block within `room` tokens, and the ids it holds.

    Turns the prompt already has (or that are summarized for this agent) are left out. Windows
    are taken best first while their formatted text fits; the first that does not fit whole is
    trimmed around its best hit. The block shows them in conversation order.
    """
    fixed = PER_MESSAGE_OVERHEAD + counter.count(RECALL_HEADER) + 1
    chosen: list[SearchWindow] = []
    used = fixed
    for window in _unseen(windows, in_prompt, summarized):
        cost = counter.count(format_window(window)) + SEPARATOR_TOKENS
        if used + cost > room:
            # Lines lose their per-turn overhead but gain a date line: trim by the text's count.
            trimmed = trim_window(window, room - used - (cost - window.token_count))
            if trimmed is None:
                continue
            window = trimmed
            cost = counter.count(format_window(window)) + SEPARATOR_TOKENS
            if used + cost > room:
                continue
        chosen.append(window)
        used += cost
    if not chosen:
        return None, []
    chosen.sort(key=lambda w: w.messages[0].sequence or 0)
    ids = [m.id for w in chosen for m in w.messages]
    return PromptMessage("system", f"{RECALL_HEADER}\n{format_windows(chosen)}"), ids


def _unseen(
    windows: list[SearchWindow], in_prompt: Collection[str],
    summarized: Callable[[StoredMessage], bool],
) -> list[SearchWindow]:
    kept: list[SearchWindow] = []
    for window in windows:
        members = tuple(m for m in window.messages
                        if m.id not in in_prompt and not summarized(m))
        present = {m.id for m in members}
        hits = tuple(h for h in window.hit_ids if h in present)
        if hits:
            kept.append(SearchWindow(hits, members))
    return kept
