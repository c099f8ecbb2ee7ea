"""The prompt assembler: the slice of a shared history one agent sees before an LLM call.

Steps, in order: load (scope, time window, `max_turns_to_load`, after the standing summary) ->
addressed-only filter -> processors (store, channel, agent) -> rolling summary -> recall search ->
token budget (newest turns first; the newest inbound always kept) -> projection to this agent's
point of view -> exact count. The result says what was included, dropped, filtered, recalled and
summarized, so a person can see why an agent knew what it knew.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from threadline.history.addressing import Addressee, addressed_turns
from threadline.history.model import Scope, StoredMessage, utc_now
from threadline.history.processors import Processor, TokenLimiter, apply_processors
from threadline.history.projection import merge_roles, project_turn
from threadline.history.prompt import AssembledPrompt, PromptMessage
from threadline.history.recall import find_recall, recall_block
from threadline.history.store import ConversationStore
from threadline.history.summary import Summarizer, latest_summary, roll_summary, summary_lock
from threadline.history.tokens import (
    PER_MESSAGE_OVERHEAD,
    TokenCounter,
    default_counter,
    exchange_tokens,
)

TRUNCATION_MARKER = "\n[... message truncated to fit the token budget]"
SUMMARY_HEADER = "Summary of the earlier conversation:"


@dataclass(frozen=True)
class AssemblerOptions:
    """How much history an agent sees and how it is chosen; defaults suit a support bot.

    `cache_stride`: when the history is over budget, the oldest kept turn only moves in steps
    of this many sequence numbers, so the prompt's prefix stays byte-identical for several
    turns and a provider's prompt cache stays warm (0 moves it every turn).
    """

    scope: Scope | None = None
    token_budget: int = 3000
    addressed_only_mode: bool = True
    rolling_summary_threshold: int = 40
    time_window_minutes: int | None = None
    max_turns_to_load: int = 100
    agent_aliases: tuple[str, ...] = ()
    recall: bool = True
    recall_share: float = 1 / 3
    recall_limit: int = 5
    summary_timeout: float = 20.0
    tool_trace: bool = False
    processors: tuple[Processor, ...] = ()
    cache_stride: int = 10

    def __post_init__(self) -> None:
        if self.token_budget < 50:
            raise ValueError(f"AssemblerOptions.token_budget must be at least 50, "
                             f"got {self.token_budget}")
        if not 0 <= self.recall_share < 1:
            raise ValueError(f"AssemblerOptions.recall_share must be in [0, 1), "
                             f"got {self.recall_share}")
        if self.rolling_summary_threshold < 2:
            raise ValueError("AssemblerOptions.rolling_summary_threshold must be at least 2, "
                             f"got {self.rolling_summary_threshold}")


def prompt_tokens(messages: Sequence[PromptMessage], counter: TokenCounter) -> int:
    """The exact token count of prompt messages, as the budget measures them."""
    total = 0
    for message in messages:
        total += PER_MESSAGE_OVERHEAD + counter.count(message.content)
        total += sum(exchange_tokens(e, counter) for e in message.tool_exchanges)
    return total


def _truncate(message: StoredMessage, max_tokens: int, counter: TokenCounter) -> StoredMessage:
    """The message cut to about `max_tokens`, marked as truncated."""
    room = max(max_tokens - PER_MESSAGE_OVERHEAD - 20, 10)
    text = message.content
    low, high = 0, len(text)
    while low < high:  # longest prefix that fits, by binary search on characters
        middle = (low + high + 1) // 2
        if counter.count(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    cut = text[:low] + TRUNCATION_MARKER
    return replace(message, content=cut, tool_exchanges=(), token_count=counter.count(cut)
                   + PER_MESSAGE_OVERHEAD + counter.count(message.participant.display_name))


def _stable_split(
    turns: list[StoredMessage], max_tokens: int, stride: int
) -> tuple[list[StoredMessage], list[StoredMessage]]:
    """TokenLimiter's split, with the first kept turn moved up to a multiple of `stride`."""
    included, dropped = TokenLimiter(max_tokens).split(turns)
    if not dropped or stride <= 1 or len(included) < 2:
        return included, dropped
    first = included[0].sequence or 0
    boundary = -(-first // stride) * stride
    moved = [m for m in included[:-1] if (m.sequence or 0) < boundary]
    return included[len(moved):], dropped + moved


async def assemble_prompt(
    store: ConversationStore,
    conversation_id: str,
    agent_id: str,
    agent_name: str,
    options: AssemblerOptions | None = None,
    summarizer: Summarizer | None = None,
    *,
    counter: TokenCounter | None = None,
) -> AssembledPrompt:
    """The prompt `agent_id` sees for the newest turn of `conversation_id`; see the module doc."""
    options = options or AssemblerOptions()
    counter = counter or default_counter()
    notes: list[str] = []

    since = (utc_now() - timedelta(minutes=options.time_window_minutes)
             if options.time_window_minutes else None)
    # Both reads at once: the newest turns after the summary are the newest turns, less
    # those the summary covers.
    summary, recent = await asyncio.gather(
        latest_summary(store, conversation_id, agent_id),
        store.get(conversation_id, scope=options.scope, since=since,
                  limit=options.max_turns_to_load))
    summary_range = summary.metadata.summary_of if summary else None
    loaded = [m for m in recent
              if summary_range is None or (m.sequence or 0) > summary_range[1]]
    if not loaded:
        return AssembledPrompt(messages=[], token_count=0, notes=["no turns in this conversation"])
    newest = loaded[-1]

    addressee = Addressee.of(agent_id, (agent_name, *options.agent_aliases))
    kept, filtered = (addressed_turns(loaded, addressee) if options.addressed_only_mode
                      else (list(loaded), []))
    if not kept or kept[-1].id != newest.id:
        kept.append(newest)  # the turn being answered is always seen
        filtered = [m for m in filtered if m.id != newest.id]
    kept = apply_processors(kept, options.processors)

    summary_created = False
    if summarizer is not None and len(kept) > options.rolling_summary_threshold:
        keep_recent = max(options.rolling_summary_threshold // 2, 1)
        async with summary_lock(conversation_id, agent_id):
            rolled = await roll_summary(store=store, summarizer=summarizer, previous=summary,
                                        old_turns=kept[:-keep_recent], agent_id=agent_id,
                                        time_limit=options.summary_timeout)
        if rolled is None:
            notes.append("summarizer failed or timed out; fell back to the token budget alone")
        else:
            summary, summary_range, summary_created = rolled, rolled.metadata.summary_of, True
            kept = kept[-keep_recent:]

    head: list[PromptMessage] = []
    if summary is not None:
        head.append(PromptMessage("system", f"{SUMMARY_HEADER}\n{summary.content}"))
    budget = options.token_budget - prompt_tokens(head, counter)

    recall_cap = int(options.token_budget * options.recall_share) if options.recall else 0
    windows = await find_recall(store, conversation_id, newest.content, token_cap=recall_cap,
                                limit=options.recall_limit)
    reserved = min(recall_cap, sum(w.token_count for w in windows))

    def summarized(message: StoredMessage) -> bool:
        return (summary_range is not None
                and summary_range[0] <= (message.sequence or 0) <= summary_range[1]
                and addressee.is_addressed(message, own_message_ids=frozenset()))

    turns_budget = max(budget - reserved, 0)
    while True:
        included, dropped = _stable_split(kept, turns_budget, options.cache_stride)
        if included and (included[0].token_count or 0) > turns_budget:
            included[0] = _truncate(included[0], turns_budget, counter)
            notes.append(f"newest turn {newest.id} truncated to fit the budget")
        block, recalled_ids = recall_block(windows, in_prompt={m.id for m in included},
                                           summarized=summarized)
        body = [project_turn(m, agent_id, tool_trace=options.tool_trace) for m in included]
        if block is not None:
            body.insert(len(body) - 1, block)
        messages = merge_roles(head + body)
        total = prompt_tokens(messages, counter)
        if total <= options.token_budget or turns_budget <= 0:
            break
        # Stored counts are per turn; names and merging can add a few tokens. Shrink and redo.
        turns_budget -= total - options.token_budget
        if len(included) == 1 and block is not None:
            windows = []
    result = AssembledPrompt(
        messages=messages,
        token_count=total,
        included_ids=[m.id for m in included],
        dropped_for_budget_ids=[m.id for m in dropped],
        filtered_ids=[m.id for m in filtered],
        recalled_ids=recalled_ids,
        recall_hit_ids=[h for w in windows for h in w.hit_ids if h in set(recalled_ids)],
        summary_used=summary is not None,
        summary_created=summary_created,
        notes=notes,
    )
    return result
