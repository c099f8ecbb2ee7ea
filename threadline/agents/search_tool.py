"""The `conversation_search` tool: a model searches the conversation it is in, and only that one.

The conversation id is captured by the closure when the tool is made for a turn; nothing in the
model's input can name another conversation (such keys are refused, with a reason the model can
act on). With person memory, the person being answered is captured the same way (a
`PersonMemory` whose keys were fixed for this turn): the tool also shows that person's own words
from the other conversations this one may see, and nobody else's.

Results are hits with their neighbouring turns, token-capped, each line saying who spoke and
when (an absolute date, so "yesterday" in a turn still means something).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from threadline.agents.tools import input_problem
from threadline.errors import SearchQueryError
from threadline.history.meaning import search_windows
from threadline.history.model import StoredMessage
from threadline.history.person_memory import PersonMemory, format_said_elsewhere
from threadline.history.recall import only
from threadline.history.search import format_windows
from threadline.history.store import ConversationStore, SearchWindow

SEARCH_TOOL_NAME = "conversation_search"
MAX_LIMIT = 20

_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "pattern": r"\S",
                  "description": "A question or key words about what was said earlier."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 5,
                  "description": "How many matching turns to show."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class ConversationSearchTool:
    """A tool bound to one conversation: name, description, JSON input schema and handler.

    `search` gives the windows a query finds (what `run` formats for the model).
    """

    name = SEARCH_TOOL_NAME
    description = (
        "Search earlier messages of this conversation (older than what you can see). Ask with a "
        "question or key words; results show who said what and when, with the turns around it."
    )

    def __init__(self, search: Callable[[str, int], Awaitable[list[SearchWindow]]],
                 person: PersonMemory | None = None) -> None:
        self.search = search
        self.person = person
        self.input_schema: dict[str, Any] = dict(_INPUT_SCHEMA)

    async def run(self, input: dict[str, Any]) -> str:
        try:
            query, limit = read_search_input(input)
            windows = await self.search(query, limit)
            elsewhere: list[StoredMessage] = (
                await self.person.search(query, limit=limit) if self.person else [])
        except (ValueError, SearchQueryError) as exc:
            return f"error: {exc}"
        if not windows and not elsewhere:
            return "No earlier messages match that (beyond what you can see). Try other key words."
        parts = [format_windows(windows)] if windows else []
        if elsewhere and self.person is not None:
            parts.append(f"{self.person.header}\n{format_said_elsewhere(elsewhere)}")
        return "\n---\n".join(parts)


def read_search_input(raw: Mapping[str, Any]) -> tuple[str, int]:
    """The query and limit from a model's input; raises ValueError with a reason for the model
    (checked against the tool's own schema, like every tool's input)."""
    problem = input_problem(_INPUT_SCHEMA, raw)
    if problem is not None:
        raise ValueError(problem)
    return raw["query"], raw.get("limit", _INPUT_SCHEMA["properties"]["limit"]["default"])


def make_conversation_search_tool(
    store: ConversationStore,
    conversation_id: str,
    *,
    token_cap: int = 1500,
    context: int | tuple[int, int] = 1,
    exclude_ids: Collection[str] = (),
    forgotten_through: int | None = None,
    person: PersonMemory | None = None,
    by_meaning: bool = True,
) -> ConversationSearchTool:
    """The search tool for one conversation; the id lives only in this closure.

    `person`: the memory of the person being answered (their own words elsewhere), or None.
    `by_meaning`: also find turns by meaning where the model and vectors are there
    (`threadline.history.meaning`).

    `exclude_ids` are turns that must not come back (the message being answered, which matches
    its own question best, and every turn the prompt already shows: `AssembledPrompt.shown_ids`).
    They are left out inside the search, so `limit` new hits still come back. Turns at or
    before `forgotten_through` (the agent was asked to forget them) and commands never come back.
    """
    excluded = frozenset(exclude_ids)

    async def search(query: str, limit: int) -> list[SearchWindow]:
        found = await search_windows(store, conversation_id, query, limit=limit,
                                     context=context, token_cap=token_cap,
                                     exclude_ids=excluded, by_meaning=by_meaning)
        return only(found, lambda m: not m.is_command and (
            forgotten_through is None or (m.sequence or 0) > forgotten_through))

    return ConversationSearchTool(search, person)
