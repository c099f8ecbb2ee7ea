"""Automatic recall: earlier turns that answer the newest message, put into the prompt.

Before the budget step the conversation is searched with the newest inbound turn; the best hits
that are not already in the prompt (nor summarized for this agent) come with their neighbouring
turns as one clearly marked block. So a fact reaches the model even when it does not call the
search tool, and even in addressed-only mode, where most of a busy channel is filtered out.
The block is a pure function of the stored turns, stable byte for byte for prompt caching.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptMessage
from threadline.history.search import ENGLISH_STOP_WORDS, SearchQuery, format_windows
from threadline.history.store import ConversationStore, SearchWindow

RECALL_HEADER = "Earlier in this conversation (found by search, with the turns around it):"


def worth_recalling(text: str) -> bool:
    """Whether a message has any word beyond stop words to search with ("ok thanks" has not)."""
    parsed = SearchQuery.parse(text[:2000])
    return any(t not in ENGLISH_STOP_WORDS for t in parsed.terms) or bool(parsed.trigrams)


async def find_recall(
    store: ConversationStore,
    conversation_id: str,
    query_text: str,
    *,
    token_cap: int,
    limit: int = 5,
) -> list[SearchWindow]:
    """Search windows for the newest message, before knowing which turns the prompt keeps."""
    if token_cap <= 0 or not worth_recalling(query_text):
        return []
    return await store.search_context(conversation_id, query_text[:2000], limit=limit,
                                      context=1, token_cap=token_cap)


def recall_block(
    windows: list[SearchWindow],
    *,
    in_prompt: Collection[str],
    summarized: Callable[[StoredMessage], bool],
) -> tuple[PromptMessage | None, list[str]]:
    """The recall system block and the ids it holds, leaving out turns the prompt already has."""
    kept: list[SearchWindow] = []
    for window in windows:
        members = tuple(m for m in window.messages
                        if m.id not in in_prompt and not summarized(m))
        hits = tuple(h for h in window.hit_ids if any(m.id == h for m in members))
        if hits:
            kept.append(SearchWindow(hits, members))
    if not kept:
        return None, []
    ids = [m.id for w in kept for m in w.messages]
    return PromptMessage("system", f"{RECALL_HEADER}\n{format_windows(kept)}"), ids
