"""Property-based: any transcript assembles into a valid Anthropic prompt within the budget."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline.agents.convert import to_anthropic
from threadline.history import (
    InMemoryConversationStore,
    Participant,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.assembler import AssemblerOptions, assemble_prompt

PEOPLE = [
    Participant(kind="user", id="U1", display_name="Ann"),
    Participant(kind="user", id="U2", display_name="Bob"),
    Participant(kind="agent", id="support", display_name="Support"),
    Participant(kind="agent", id="billing", display_name="Billing"),
    Participant(kind="system", id="sys", display_name="System"),
]

turn_strategy = st.tuples(
    st.integers(0, len(PEOPLE) - 1),
    st.text(min_size=0, max_size=120),
    st.sampled_from(["channel", "thread", "dm"]),
    st.booleans(),  # mentions support
    st.integers(0, 2),  # tool exchanges (agents only)
)


def build(raw: list[tuple[int, str, str, bool, int]]) -> list[StoredMessage]:
    turns = []
    for index, (who, text, scope, mention, tools) in enumerate(raw):
        participant = PEOPLE[who]
        exchanges = tuple(
            ToolExchange(ToolCall(f"t{index}_{n}", "lookup", {"n": n}),
                         ToolResult(f"t{index}_{n}", "result " * (n + 1)))
            for n in range(tools)
        ) if participant.kind == "agent" else ()
        turns.append(StoredMessage(conversation_id="c", participant=participant, content=text,
                                   scope=scope,  # type: ignore[arg-type]
                                   metadata={"mentions": ["support"] if mention else []},
                                   tool_exchanges=exchanges))
    return turns


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.lists(turn_strategy, min_size=1, max_size=40),
       budget=st.integers(60, 1500),
       addressed=st.booleans(),
       recall=st.booleans())
def test_any_transcript_gives_a_valid_prompt(
    raw: list[tuple[int, str, str, bool, int]], budget: int, addressed: bool, recall: bool
) -> None:
    async def run() -> None:
        store = InMemoryConversationStore()
        await store.append_many(build(raw))
        prompt = await assemble_prompt(
            store, "c", "support", "Support",
            AssemblerOptions(token_budget=budget, addressed_only_mode=addressed, recall=recall))
        assert prompt.token_count <= budget
        _, turns = to_anthropic(prompt.messages)
        if not turns:
            return
        assert turns[0]["role"] == "user"
        assert all(a["role"] != b["role"] for a, b in itertools.pairwise(turns))
        open_calls: set[str] = set()
        for turn in turns:
            for block in turn["content"]:
                if block["type"] == "tool_use":
                    open_calls.add(block["id"])
                elif block["type"] == "tool_result":
                    assert block["tool_use_id"] in open_calls  # never an orphan result
                    open_calls.discard(block["tool_use_id"])
        assert not open_calls  # never a call without its result

    asyncio.run(run())
