"""History processors: tool filters, segment-aware limits, masking with retrieval."""

from __future__ import annotations

import pytest

from tests.history.transcripts import ANN, SUPPORT
from threadline.history import (
    InMemoryConversationStore,
    StoredMessage,
    ToolCall,
    ToolExchange,
    ToolResult,
)
from threadline.history.assembler import AssemblerOptions, assemble_prompt
from threadline.history.processors import (
    TokenLimiter,
    ToolCallFilter,
    ToolResultMasking,
    make_retrieve_tool_result_tool,
)


def agent_turn(*names: str, result: str = "ok") -> StoredMessage:
    return StoredMessage(
        conversation_id="c", participant=SUPPORT, content="done",
        tool_exchanges=tuple(ToolExchange(ToolCall(f"id_{n}", n, {}), ToolResult(f"id_{n}", result))
                             for n in names),
    )


def test_tool_call_filter_modes() -> None:
    turns = [agent_turn("search_docs", "lookup")]
    assert [e.call.name for e in ToolCallFilter(exclude=["lookup"])(turns)[0].tool_exchanges] == [
        "search_docs"]
    assert [e.call.name for e in ToolCallFilter(include=["lookup"])(turns)[0].tool_exchanges] == [
        "lookup"]
    traced = ToolCallFilter(trace=True)(turns)[0]
    assert traced.tool_exchanges == () and traced.content == "done\n(Used search_docs, lookup)"
    with pytest.raises(ValueError, match="not both"):
        ToolCallFilter(exclude=["a"], include=["b"])


def test_token_limiter_keeps_whole_turns() -> None:
    turns = [t.with_store_fields(sequence=i, token_count=100) for i, t in
             enumerate([agent_turn("a"), agent_turn("b"), agent_turn("c")])]
    kept, dropped = TokenLimiter(250).split(turns)
    assert [t.sequence for t in kept] == [1, 2] and [t.sequence for t in dropped] == [0]
    assert [t.sequence for t in TokenLimiter(10)(turns)] == [2]  # the newest always stays


async def test_masking_hides_old_large_results_and_retrieval_shows_them() -> None:
    store = InMemoryConversationStore()
    big = "row " * 200
    for n in range(4):
        await store.append(agent_turn(f"tool{n}", result=big))
    await store.append(StoredMessage(conversation_id="c", participant=ANN, content="@support?"))
    masking = ToolResultMasking(keep_recent=2, exclude=["tool0"], min_tokens=50)
    prompt = await assemble_prompt(store, "c", "support", "Support",
                                   AssemblerOptions(recall=False, processors=(masking,)))
    results = {e.call.name: e.result.content for m in prompt.messages for e in m.tool_exchanges}
    assert results["tool0"] == big  # excluded from masking
    assert results["tool1"].startswith("[tool result of tool1") and "id_tool1" in results["tool1"]
    assert results["tool2"] == big and results["tool3"] == big  # the two most recent
    stored = await store.get("c")
    assert stored[1].tool_exchanges[0].result.content == big  # storage keeps it whole
    retrieve = make_retrieve_tool_result_tool(store, "c")
    assert await retrieve.run({"tool_call_id": "id_tool1"}) == big
    assert "no tool call" in await retrieve.run({"tool_call_id": "nope"})
