"""Grounding a turn: the best sections of the agent's sources, in its prompt, within a share of
its token budget, numbered so the reply can say where it read what it says.

The block goes where recall's fresh block goes, with the newest turn (the agent puts it just
before the answered turn): what changes every turn stays at the end of the prompt, so the
cached prefix (system prompt, kept recall block, earlier turns) is the same bytes with it or
without it, and it costs the prompt cache no more than recall's fresh block already does
(LESSONS: "keep what changes at the end and keep it stable"). The block is a pure function of
the sections found, in rank order: the same turn asked again renders the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from threadline.history.prompt import PromptMessage
from threadline.history.tokens import PER_MESSAGE_OVERHEAD, TokenCounter
from threadline.knowledge.source import FoundSection

KNOWLEDGE_HEADER = ("From the team's documents (found for this message; when you use one, "
                    "name its document and section, with its link when it has one):")
SEARCH_HEADER = "Sections found in the team's documents:"
SEPARATOR = "\n---\n"
# Sections asked of the sources for a block (more than a block holds: it takes the best that
# fit, and a long first section does not leave the rest of the room empty).
CANDIDATES = 12


@dataclass(frozen=True, slots=True)
class Grounded:
    """What grounding shows one turn: the block (None: nothing found or no room) and its
    sections, in the order the block numbers them."""

    message: PromptMessage | None
    sections: tuple[FoundSection, ...]
    tokens: int


NOTHING = Grounded(None, (), 0)


def cite(section: FoundSection) -> str:
    """How a section is named to the model and in the console: "Title > Heading <link>"."""
    return f"{section.path} <{section.link}>" if section.link else section.path


def render_sections(sections: Sequence[FoundSection], *, header: str) -> str:
    """Numbered sections under `header`, each with its citation line then its text."""
    parts = [f"[{n}] {cite(s)}\n{s.text}" for n, s in enumerate(sections, start=1)]
    return f"{header}\n{SEPARATOR.join(parts)}"


def fit_sections(found: Sequence[FoundSection], *, room: int, counter: TokenCounter,
                 header: str = KNOWLEDGE_HEADER) -> Grounded:
    """The best of `found` whose rendered block fits `room` tokens, taken best first (one
    that does not fit is passed over for a shorter one after it)."""
    chosen: list[FoundSection] = []
    used = PER_MESSAGE_OVERHEAD + counter.count(header) + 1
    for section in found:
        cost = counter.count(f"[{len(chosen) + 1}] {cite(section)}\n{section.text}") + 3
        if used + cost <= room:
            chosen.append(section)
            used += cost
    while chosen:
        text = render_sections(chosen, header=header)
        tokens = PER_MESSAGE_OVERHEAD + counter.count(text)
        if tokens <= room:
            return Grounded(PromptMessage("system", text, part="knowledge"), tuple(chosen),
                            tokens)
        chosen.pop()  # the estimate was short: the worst-ranked section goes
    return NOTHING
