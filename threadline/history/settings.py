"""History settings: what each agent's prompt holds (`memory:`) and how long turns are
kept (`history:`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from pydantic import (
    Field,
)

from threadline.history.assembler import AssemblerOptions
from threadline.settings_section import Section

_ASSEMBLER = AssemblerOptions()


class MemorySettings(Section):
    """The `AssemblerOptions` a config may set: how much of the shared history an agent sees.

    Defaults are the assembler's own; the limits are stated here so a wrong value is reported
    with its file, line and key.
    """

    token_budget: int = Field(default=_ASSEMBLER.token_budget, ge=50)
    """Tokens of history (summary, recalled and kept turns) in each prompt."""
    addressed_only_mode: bool = _ASSEMBLER.addressed_only_mode
    """See only the turns addressed to or written by this agent (plus the few just before an
    addressed turn), not the whole channel."""
    rolling_summary_threshold: int = Field(default=_ASSEMBLER.rolling_summary_threshold, ge=2)
    """Past this many kept turns, the oldest are folded into one stored summary per agent."""
    time_window_minutes: int | None = Field(default=_ASSEMBLER.time_window_minutes, gt=0)
    """Load only turns from the last this many minutes (null: no time limit)."""
    max_turns_to_load: int = Field(default=_ASSEMBLER.max_turns_to_load, gt=0)
    """The most recent turns loaded from the store before filtering and budgeting."""
    recall: bool = _ASSEMBLER.recall
    """Search the whole conversation for what the new message asks about and add the best earlier
    turns."""
    recall_limit: int = Field(default=_ASSEMBLER.recall_limit, ge=0)
    """The fewest recall hits asked for (more when the budget has room)."""
    recall_by_meaning: bool = _ASSEMBLER.recall_by_meaning
    """Recall and conversation_search also find turns by meaning, beside their words, when the
    threadline[embeddings] extra is installed and the backend keeps vectors (false: by words
    only)."""
    person_memory: bool | None = None
    """Also find the person's own words from other conversations this one may see (null: follow
    people.memory)."""

    def options(self, people_memory: bool = False) -> AssemblerOptions:
        """The assembler's options with these settings applied; `people_memory` is the
        deployment's `people.memory`, which `person_memory` overrides when set."""
        chosen = people_memory if self.person_memory is None else self.person_memory
        return replace(_ASSEMBLER, **self.model_dump(exclude={"person_memory"}),
                       person_memory=chosen)


class HistorySettings(Section):
    """How long turns are kept: `retention_days` for all, `retention_days_for` per conversation
    id or workspace (`slack:T123`, `telegram:-100456`), the longest matching key winning
    (None keeps forever). Pruning runs in the background every `prune_every_minutes`.
    `answer_edits`: a person's edit of a message already answered is stored, and answered
    again only when this is on (a message not answered yet is always answered as edited)."""

    retention_days: float | None = Field(default=None, gt=0)
    """Delete turns older than this many days (null keeps them forever)."""
    retention_days_for: dict[str, Annotated[float, Field(gt=0)] | None] = Field(
        default_factory=dict)
    """Retention per conversation id or workspace (slack:T123, telegram:-100456), the longest
    matching key winning; null keeps forever."""
    prune_every_minutes: float = Field(default=60, gt=0)
    """How often old turns are pruned in the background."""
    answer_edits: bool = False
    """Answer a person's edit of a message already answered again (a message not answered yet
    is always answered as edited; the edit is stored either way)."""
