"""The prompt assembler: the slice of a shared history one agent sees before an LLM call.

Steps, in order: load (scope, time window, `max_turns_to_load`, after the standing summary or
forget marker, up to the turn being answered, commands left out) -> addressed-only filter, plus
the immediate context said just before that turn -> processors (store, channel, agent) ->
rolling summary -> recall search (when the prompt may leave out a turn it could show) -> token
budget (newest turns first; the answered turn always kept; recall fills what the turns leave;
an agent's kept recall block stands just before the turn it was made for while the topic
holds: `history.kept_recall`) -> projection to this agent's point of view -> exact count.
The result says what was included, dropped, filtered, recalled and summarized, so a person can
see why an agent knew what it knew.

Recall also searches the turns a rolling summary covers: a summary is a model's short retelling
and drops the details people come back for (an order number, a date), so the turn itself may
still be shown word for word when a later question asks for it (bench/bill.py: a conversation
addressed to one agent throughout had 2.1% of its questions' evidence in the prompt at turn 300
while summarized turns were never recalled, 62.1% now).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial

from threadline.errors import ConfigError
from threadline.history.addressing import Addressee, addressed_turns
from threadline.history.kept_recall import KeptRecall, RecallAsk, RecallBlocks, show_recall
from threadline.history.model import Scope, StoredMessage, utc_now
from threadline.history.person_memory import PersonMemory, person_block
from threadline.history.processors import Processor, TokenLimiter, apply_processors
from threadline.history.projection import SpeakerLabels, merge_roles, project_turn, turn_text
from threadline.history.prompt import AssembledPrompt, PromptMessage
from threadline.history.recall import (
    find_recall,
    only,
    worth_recalling,
)
from threadline.history.store import ConversationStore, LoopReadingStore, SearchWindow
from threadline.history.summary import (
    Summarizer,
    forgotten_through,
    is_forget_marker,
    latest_summary,
    roll_summary,
    summary_lock,
)
from threadline.history.tokens import (
    PER_MESSAGE_OVERHEAD,
    TokenCounter,
    default_counter,
    exchange_tokens,
    message_tokens,
)

TRUNCATION_MARKER = "\n[... message truncated to fit the token budget]"
SUMMARY_HEADER = "Summary of the earlier conversation:"
CONTEXT_HEADER = "Said just before this message (not addressed to you):"


@dataclass(frozen=True)
class AssemblerOptions:
    """How much history an agent sees and how it is chosen; defaults suit a support bot.

    `cache_stride`: when the history is over budget, the oldest kept turn only moves in steps
    of this many sequence numbers, so the prompt's prefix stays byte-identical for several
    turns and a provider's prompt cache stays warm (0 moves it every turn). The loading
    window (`max_turns_to_load`) moves the same way, in steps of half its size: it holds at
    least that many turns and at most half as many again.

    `recall_share`: the share of the budget recall may always claim when it finds something;
    beyond it, recall fills whatever the kept turns leave. `recall_limit`: the fewest hits it
    asks for (more when there is room). `recall_by_meaning`: recall also finds turns by
    meaning when the embeddings extra is installed and the backend keeps vectors
    (`threadline.history.meaning`). `immediate_turns` / `immediate_minutes`: in
    addressed-only mode, up to this many turns said just before the answered one (each within
    this many minutes of the next) are kept as its immediate context (0 turns: none).

    `person_memory`: the person being answered also finds their own words from other
    conversations this one may see (`threadline.history.person_memory`), in a block of at most
    `person_share` of the budget.
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
    recall_by_meaning: bool = True
    summary_timeout: float = 20.0
    tool_trace: bool = False
    processors: tuple[Processor, ...] = ()
    cache_stride: int = 10
    immediate_turns: int = 3
    immediate_minutes: float = 10.0
    person_memory: bool = False
    person_share: float = 0.15

    def __post_init__(self) -> None:
        if self.token_budget < 50:
            raise ConfigError(f"AssemblerOptions.token_budget must be at least 50, "
                              f"got {self.token_budget}")
        if not 0 <= self.person_share < 1:
            raise ConfigError(f"AssemblerOptions.person_share must be in [0, 1), "
                              f"got {self.person_share}")
        if not 0 <= self.recall_share < 1:
            raise ConfigError(f"AssemblerOptions.recall_share must be in [0, 1), "
                              f"got {self.recall_share}")
        if self.immediate_turns < 0 or self.immediate_minutes < 0:
            raise ConfigError("AssemblerOptions.immediate_turns and immediate_minutes must be "
                              f">= 0, got {self.immediate_turns} and {self.immediate_minutes}")
        if self.rolling_summary_threshold < 2:
            raise ConfigError("AssemblerOptions.rolling_summary_threshold must be at least 2, "
                              f"got {self.rolling_summary_threshold}")


def prompt_tokens(messages: Sequence[PromptMessage], counter: TokenCounter) -> int:
    """The exact token count of prompt messages, as the budget measures them."""
    total = 0
    for message in messages:
        total += PER_MESSAGE_OVERHEAD + counter.count(message.content)
        total += sum(exchange_tokens(e, counter) for e in message.tool_exchanges)
    return total


class _CountOnce:
    """A token counter that counts each text once per assembly (the fitting loop recounts)."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._known: dict[str, int] = {}

    def count(self, text: str) -> int:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = self._counter.count(text)
        return known


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
    answering: StoredMessage | None = None,
    person: PersonMemory | None = None,
    kept_recall: KeptRecall | None = None,
) -> AssembledPrompt:
    """The prompt `agent_id` sees for one turn of `conversation_id`; see the module doc.

    `answering` is the turn being answered (default: the newest stored turn). Turns stored
    after it are not part of the prompt, and recall never finds it or what follows it. When it
    is not in the store yet (its write waits in an outbox), it is still the prompt's last turn.
    `person` is the answered person's memory, searched when `options.person_memory` is on.
    `kept_recall` holds the agent's kept recall block per conversation; without it every turn
    makes one fresh block.
    """
    options = options or AssemblerOptions()
    counter = _CountOnce(counter or default_counter())
    notes: list[str] = []
    since = (utc_now() - timedelta(minutes=options.time_window_minutes)
             if options.time_window_minutes else None)
    if answering is None:  # the newest stored turn (one short read, so recall can start now)
        newest_stored = await store.get(conversation_id, scope=options.scope, since=since,
                                        limit=1)
        answering = newest_stored[-1] if newest_stored else None

    # Recall searches for the answered turn while the history loads (one round trip less);
    # turns stored after the answered one are taken out of its windows below. A store that
    # reads on the loop gains nothing from that: there the history comes first, and recall
    # searches only when the prompt leaves it a turn to show (`_recall_needless`).
    found: list[SearchWindow] | None = None
    in_turn = isinstance(store, LoopReadingStore) and store.reads_on_the_loop
    if in_turn:
        summary, loaded, whole = await _load(store, conversation_id, agent_id, options,
                                             answering, since, in_turn=True)
        elsewhere = await _person_hits(person, answering, options)
    else:
        (summary, loaded, whole), found, elsewhere = await asyncio.gather(
            _load(store, conversation_id, agent_id, options, answering, since, in_turn=False),
            _recall_for(store, conversation_id, answering, options),
            _person_hits(person, answering, options))
    if not loaded:
        return AssembledPrompt(messages=[], token_count=0, notes=["no turns in this conversation"],
                               forgotten_through=forgotten_through(summary))
    newest = loaded[-1]
    if newest.sequence is None:
        notes.append("the turn being answered is not in the store yet; added as the newest")

    addressee = Addressee.of(agent_id, (agent_name, *options.agent_aliases))
    kept, filtered = (addressed_turns(loaded, addressee) if options.addressed_only_mode
                      else (list(loaded), []))
    if not kept or kept[-1].id != newest.id:
        kept.append(newest)  # the turn being answered is always seen
        filtered = [m for m in filtered if m.id != newest.id]
    context = (immediate_context(loaded, kept, turns=options.immediate_turns,
                                 gap=timedelta(minutes=options.immediate_minutes))
               if options.addressed_only_mode else [])
    context_ids = {m.id for m in context}
    if context:
        position = {m.id: i for i, m in enumerate(loaded)}
        kept = sorted([*kept, *context], key=lambda m: position[m.id])
        filtered = [m for m in filtered if m.id not in context_ids]
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
            summary, summary_created = rolled, True
            kept = kept[-keep_recent:]

    head: list[PromptMessage] = []
    if summary is not None and not is_forget_marker(summary):
        head.append(PromptMessage("system", f"{SUMMARY_HEADER}\n{summary.content}"))
    said_elsewhere, elsewhere_ids = (
        person_block(person, elsewhere, room=int(options.token_budget * options.person_share),
                     counter=counter) if person is not None else (None, []))
    beside = [said_elsewhere] if said_elsewhere is not None else []
    room = options.token_budget - prompt_tokens([*head, *beside], counter)

    stored = [m for m in loaded if m.sequence is not None]
    through = stored[-1].sequence if stored else None
    forgotten = forgotten_through(summary)
    fitting = _Fitting(
        kept=kept, context=context, context_ids=context_ids, agent_id=agent_id,
        options=options, head=head, beside=beside, room=room, newest=newest, counter=counter,
        visible=_recallable(through, forgotten),
        show=partial(show_recall, kept_recall, store, conversation_id, agent_id))
    # A prompt with every turn recall may show needs no recall (on every store, so each
    # gives the same prompt); one the budget leaves a turn out of does.
    fitted = fitting.fit([]) if _recall_needless(whole, loaded, kept) else None
    if fitted is None or fitted.dropped:
        if found is None:
            found = await _recall_for(store, conversation_id, answering, options)
        fitted = fitting.fit(found)
    notes.extend(fitted.notes)
    recalled, included = fitted.recalled, fitted.included
    return AssembledPrompt(
        messages=fitted.messages,
        token_count=fitted.total,
        included_ids=[m.id for m in included],
        dropped_for_budget_ids=[m.id for m in fitted.dropped],
        filtered_ids=[m.id for m in filtered],
        recalled_ids=[m.id for w in recalled.shown for m in w.messages],
        recall_hit_ids=_ranked_hits(fitted.windows, recalled.shown),
        elsewhere_ids=elsewhere_ids,
        context_ids=[m.id for m in included if m.id in context_ids],
        summary_used=summary is not None and not is_forget_marker(summary),
        summary_created=summary_created,
        notes=notes,
        forgotten_through=forgotten,
    )


def _recall_needless(whole: bool, loaded: list[StoredMessage], kept: list[StoredMessage]
                     ) -> bool:
    """Whether recall could show nothing: every turn it may show was loaded (`whole`) and
    kept for the prompt (none filtered, summarized now or dropped by a processor); the
    budget may still leave some out (`_Fitting.fit` says which)."""
    return whole and {m.id for m in loaded} <= {m.id for m in kept}


@dataclass(frozen=True, slots=True)
class _Fitted:
    """One fitting of the turns and recall into the budget."""

    included: list[StoredMessage]
    dropped: list[StoredMessage]
    windows: list[SearchWindow]
    recalled: RecallBlocks
    messages: list[PromptMessage]
    total: int
    notes: list[str]


@dataclass(frozen=True, slots=True)
class _Fitting:
    """What the budget is fitted from, once the history is loaded: the kept turns, the
    context said just before the answered turn (and its ids), the summary (`head`) and person memory
    (`beside`) blocks and the `room` they leave; `show` makes recall's blocks."""

    kept: list[StoredMessage]
    context: list[StoredMessage]
    context_ids: set[str]
    agent_id: str
    options: AssemblerOptions
    head: list[PromptMessage]
    beside: list[PromptMessage]
    room: int
    newest: StoredMessage
    counter: TokenCounter
    visible: Callable[[StoredMessage], bool]
    show: Callable[[RecallAsk], RecallBlocks]

    def fit(self, found: list[SearchWindow]) -> _Fitted:
        """The prompt with what recall `found`: recall may always claim its share of the
        budget; the rest goes to the kept turns first, newest first."""
        options, counter, newest = self.options, self.counter, self.newest
        windows = only(found, self.visible)
        wanted = sum(w.token_count for w in windows)
        turns_budget = max(
            self.room - min(wanted, int(options.token_budget * options.recall_share)),
            newest.token_count or 0, 0)
        # Every speaker the prompt may show, labelled once (unique labels; see `projection`).
        labels = SpeakerLabels([*self.kept, *(m for w in windows for m in w.messages)])
        recall_room = self.room
        notes: list[str] = []
        while True:
            included, dropped = _stable_split(self.kept, turns_budget, options.cache_stride)
            if included and (included[-1].token_count or 0) > turns_budget:
                included[-1] = _truncate(included[-1], turns_budget, counter)
                notes = [f"newest turn {newest.id} truncated to fit the budget"]
            earlier, just_before, answered = _project(included, self.context, self.agent_id,
                                                      labels, tool_trace=options.tool_trace)
            turns_total = prompt_tokens(
                merge_roles([*self.head, *earlier, *self.beside, *just_before, answered]),
                counter)
            recall_room = min(recall_room, options.token_budget - turns_total)
            in_prompt = {m.id for m in included}
            recalled = self.show(RecallAsk(
                found=windows, room=recall_room,
                steady_room=int(options.token_budget * options.recall_share),
                usable=lambda m, shown=in_prompt: (  # type: ignore[misc]
                    m.id not in shown and self.visible(m)),
                counter=counter, labels=labels, made_for=newest,
                earlier_ids=[m.id for m in included if m.id not in self.context_ids][:-1]))
            at = recalled.at
            messages = merge_roles([*self.head, *earlier[:at], *_some(recalled.kept_message),
                                    *earlier[at:], *_some(recalled.fresh_message),
                                    *self.beside, *just_before, answered])
            total = prompt_tokens(messages, counter)
            if total <= options.token_budget:
                break
            if recalled.shown:
                recall_room -= total - options.token_budget  # merging differs with the block
            elif turns_budget > 0:
                turns_budget = max(turns_budget - (total - options.token_budget), 0)
            else:
                break
        return _Fitted(included, dropped, windows, recalled, messages, total, notes)


def _ranked_hits(found: list[SearchWindow], shown: Sequence[SearchWindow]) -> list[str]:
    """The shown windows' hits, as this turn's search ranked them (a kept block's hits that
    are not hits this turn follow, in conversation order)."""
    hits = [h for w in shown for h in w.hit_ids]
    ranked = [h for w in found for h in w.hit_ids if h in set(hits)]
    return [*ranked, *(h for h in hits if h not in set(ranked))]


def _recallable(through: int | None, forgotten: int | None) -> Callable[[StoredMessage], bool]:
    """Whether recall may show a turn: stored by the answered turn, after what the agent
    forgot, and not a command."""
    return lambda m: ((through is None or (m.sequence or 0) <= through)
                      and (forgotten is None or (m.sequence or 0) > forgotten)
                      and not m.is_command)


def _some(message: PromptMessage | None) -> list[PromptMessage]:
    return [message] if message is not None else []


def _project(
    included: list[StoredMessage], context: list[StoredMessage], agent_id: str,
    labels: SpeakerLabels, *, tool_trace: bool,
) -> tuple[list[PromptMessage], list[PromptMessage], PromptMessage]:
    """(earlier turns, the immediate context as one marked block or nothing, the answered turn).

    Context turns sit right before the answered turn (the scan stops at any turn kept anyway).
    """
    context_ids = {m.id for m in context}
    turns = [project_turn(m, agent_id, tool_trace=tool_trace, labels=labels)
             for m in included if m.id not in context_ids]
    shown = [m for m in included if m.id in context_ids]
    lines = "\n".join(turn_text(labels.of(m), m.content) for m in shown)
    block = [PromptMessage("system", f"{CONTEXT_HEADER}\n{lines}")] if shown else []
    return turns[:-1], block, turns[-1]


async def _recall_for(
    store: ConversationStore, conversation_id: str, answering: StoredMessage | None,
    options: AssemblerOptions,
) -> list[SearchWindow]:
    """Recall windows for the answered turn, as many as the budget could hold."""
    if answering is None or not options.recall:
        return []
    return await find_recall(
        store, conversation_id, answering.content,
        room=options.token_budget - (answering.token_count or message_tokens(answering)),
        min_hits=options.recall_limit, exclude_ids={answering.id},
        through_sequence=answering.sequence, by_meaning=options.recall_by_meaning)


async def _person_hits(
    person: PersonMemory | None, answering: StoredMessage | None, options: AssemblerOptions,
) -> list[StoredMessage]:
    """The answered person's own earlier words elsewhere that match the answered turn."""
    if person is None or answering is None or not options.person_memory:
        return []
    if not worth_recalling(answering.content):
        return []
    return await person.search(answering.content[:2000],
                               token_cap=int(options.token_budget * options.person_share))


async def _load(
    store: ConversationStore, conversation_id: str, agent_id: str, options: AssemblerOptions,
    answering: StoredMessage | None, since: datetime | None, *, in_turn: bool,
) -> tuple[StoredMessage | None, list[StoredMessage], bool]:
    """The standing summary, the turns after it up to and including the one answered, and
    whether those are all the turns recall may show (no scope or time window left any out,
    the read took all there were, a summary covers none the agent did not forget).

    `in_turn`: the store reads on the loop, so the summary is read first and only the turns
    after it are read and decoded; otherwise both at once, and the covered turns dropped."""

    limit = options.max_turns_to_load
    stride = max(limit // 2, 1) if options.cache_stride else 1
    read_all = since is None and options.scope is None  # recall searches every scope
    after: int | None = None

    async def recent(through: int | None) -> list[StoredMessage]:
        # Its first turn moves in steps of `stride` sequence numbers, not one turn per turn:
        # every turn's prompt would otherwise start with a different turn, and no provider's
        # prompt cache could ever serve the history.
        nonlocal read_all
        loaded = await store.get(conversation_id, scope=options.scope, since=since,
                                 limit=limit + stride - 1, after_sequence=after,
                                 through_sequence=through)
        read_all = read_all and len(loaded) < limit + stride - 1
        if len(loaded) <= limit or stride == 1:
            return loaded
        first = loaded[-limit].sequence
        if first is None:
            return loaded[-limit:]
        boundary = first // stride * stride
        return [m for m in loaded if m.sequence is None or m.sequence >= boundary]

    through = answering.sequence if answering is not None else None
    if in_turn:
        summary = await latest_summary(store, conversation_id, agent_id)
        after = summary.metadata.summary_of[1] if summary and summary.metadata.summary_of else None
        loaded = await recent(through)
    else:  # the newest turns after the summary are the newest turns, less those it covers
        summary, loaded = await asyncio.gather(
            latest_summary(store, conversation_id, agent_id), recent(through))
    if answering is not None and answering.sequence is None:
        position = next((i for i, m in enumerate(loaded) if m.id == answering.id), None)
        if position is not None:
            loaded = loaded[:position + 1]
        else:
            found = await store.get_by_ids(conversation_id, [answering.id])
            if found and found[0].sequence is not None:
                loaded = await recent(found[0].sequence)
            else:  # not stored yet: what was stored before it arrived, then the turn itself
                loaded = [m for m in loaded if m.timestamp <= answering.timestamp]
                loaded.append(replace(answering, token_count=message_tokens(answering)))
    summary_range = summary.metadata.summary_of if summary else None
    forgotten = forgotten_through(summary)
    whole = read_all and (summary_range is None
                          or (forgotten is not None and forgotten >= summary_range[1]))
    # Commands and their answers are the people's controls, not conversation (the turn being
    # answered is never one: the pipeline answers commands itself).
    return summary, [m for m in loaded
                     if (summary_range is None or (m.sequence or 0) > summary_range[1]
                         or m.sequence is None) and not m.is_command], whole


def immediate_context(
    loaded: list[StoredMessage], kept: list[StoredMessage], *, turns: int, gap: timedelta
) -> list[StoredMessage]:
    """The few turns said just before the answered one that addressed-only filtering dropped.

    "Can I get a refund for it?" right after "my order 7781 never arrived" (said to another
    agent, or to nobody) needs that turn. At most `turns` turns, each within `gap` of the
    next, stopping at a turn the agent sees anyway.
    """
    newest = loaded[-1]
    seen = {m.id for m in kept}
    context: list[StoredMessage] = []
    later = newest
    for message in reversed(loaded[:-1]):
        if (message.id in seen or len(context) == turns
                or later.timestamp - message.timestamp > gap):
            break
        context.append(message)
        later = message
    return context[::-1]
