"""The `knowledge_search` tool: the model searches its own agent's documents, and only those.

Made per turn (a feature's turn tool): the agent's name and the conversation are captured by
the closure from the turn being answered, so the tool asks the agent's own sources
(`Library.search`) and nothing in the model's input can name another. The model's query is
searched with the conversation before it, as grounding is ("the form for that?" finds the form
the conversation was about), and sections the turn's knowledge block already shows are left
out, so the answer adds to what the model has.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from threadline.agents.tools import Tool, input_problem
from threadline.errors import SearchQueryError
from threadline.history.tokens import TokenCounter
from threadline.knowledge.grounding import SEARCH_HEADER, fit_sections, render_sections
from threadline.knowledge.library import Library
from threadline.knowledge.source import FoundSection, KnowledgeAsk
from threadline.turn import TurnContext

KNOWLEDGE_TOOL_NAME = "knowledge_search"
# Turns before the answered one that a search is given as its context.
CONTEXT_TURNS = 8
_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "pattern": r"\S",
                  "description": "A question or key words about what the documents say."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def search_ask(query: str, *, inbound: str, earlier: Sequence[str]) -> KnowledgeAsk:
    """What the tool searches for: the model's query with the turn it answers (the query is
    often a few key words, the turn says what they are about) and the `CONTEXT_TURNS` turns
    before it, as grounding is given them."""
    return KnowledgeAsk(f"{query}\n{inbound}", tuple(earlier[-CONTEXT_TURNS:]))


def search_result(found: Sequence[FoundSection], *, leave_out: Collection[str],
                  counter: TokenCounter, room: int = 600) -> tuple[str, list[FoundSection]]:
    """What the tool answers: the sections found that the prompt does not show already,
    numbered with their citations, within `room` tokens; and those sections."""
    fresh = [s for s in found if s.id not in leave_out]
    shown = fit_sections(fresh, room=room, counter=counter, header=SEARCH_HEADER)
    if not shown.sections:
        return ("Nothing more in the documents matches that (beyond the sections you were "
                "shown). Try other key words.", [])
    return render_sections(shown.sections, header=SEARCH_HEADER), list(shown.sections)


class KnowledgeSearchTool:
    """A tool bound to one agent's sources and one turn."""

    name = KNOWLEDGE_TOOL_NAME
    description = ("Search the team's documents (help pages, policies, manuals) for what they "
                   "say. Ask with a question or key words; results name each document and "
                   "section, with a link when it has one: cite them in your reply.")

    def __init__(self, *, library: Library, context: TurnContext, counter: TokenCounter,
                 room: int, shown: Callable[[], Collection[str]]) -> None:
        self._library = library
        self._context = context
        self._counter = counter
        self._room = room
        self._shown = shown
        self.input_schema: dict[str, Any] = dict(_INPUT_SCHEMA)

    async def run(self, input: dict[str, Any]) -> str:
        problem = input_problem(_INPUT_SCHEMA, input)
        if problem is not None:
            return f"error: {problem}"
        context = self._context
        if not self._library.has_sources(context.agent.name):
            return "You have no documents to search."
        earlier = await context.store.get(
            context.conversation_id, limit=CONTEXT_TURNS + 1,
            through_sequence=context.inbound.sequence)
        ask = search_ask(input["query"], inbound=context.inbound.content, earlier=[
            t.content for t in earlier if t.id != context.inbound.id and t.content])
        try:
            found = await self._library.search(context.agent.name, ask, limit=12)
        except SearchQueryError as exc:
            return f"error: {exc}"
        text, _ = search_result(found, leave_out=self._shown(), counter=self._counter,
                                room=self._room)
        return text


def knowledge_search_tool(library: Library, *, counter: TokenCounter, room: int,
                          shown: Callable[[TurnContext], Collection[str]]
                          ) -> Callable[[TurnContext], Tool]:
    """The per-turn factory an agent takes in `turn_tools`."""

    def make(context: TurnContext) -> Tool:
        return KnowledgeSearchTool(library=library, context=context, counter=counter,
                                   room=room, shown=lambda: shown(context))

    return make
