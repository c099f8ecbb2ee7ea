"""The offline model: searches when asked to recall, then answers from the real search tool."""

from __future__ import annotations

from tests.history.helpers import ANN, BOB, turn
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.agents.offline import OfflineModel
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.agents.tools import to_tool_spec
from threadline.history.memory import InMemoryConversationStore
from threadline.history.model import ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage

HISTORY = [
    turn("Hi, my order number is A-1042 and I prefer email updates.", who=ANN, minute=0),
    turn("Lunch is at noon on Friday.", who=BOB, minute=1),
    turn("The shipping address is 4 Elm Street.", who=ANN, minute=2),
]
QUESTION = "What did I say about my order number?"


async def recall_round_trip(question: str) -> tuple[ModelResponse, ModelResponse, str]:
    """One user question through two model calls, running the real search tool in between."""
    store = InMemoryConversationStore()
    for message in [*HISTORY, turn(question, who=ANN, minute=9)]:
        await store.append(message)
    search = make_conversation_search_tool(store, "c1")
    model = OfflineModel()
    prompt = [PromptMessage("user", f"Ann: {question}")]
    request = ModelRequest(model="offline", system="You are Ada.", messages=prompt,
                           tools=[to_tool_spec(search)])
    first = await model.complete(request)
    (call,) = first.tool_calls
    result = await search.run(dict(call.input))
    done = PromptMessage("assistant", first.text,
                         tool_exchanges=(ToolExchange(call, ToolResult(call.id, result)),))
    second = await model.complete(ModelRequest(
        model="offline", system="You are Ada.", messages=[*prompt, done], tools=request.tools))
    await store.close()
    return first, second, result


async def test_a_recall_question_searches_then_quotes_the_top_result() -> None:
    first, second, result = await recall_round_trip(QUESTION)

    assert first.stop_reason == "tool_use"
    assert first.text.startswith("[offline model]")
    assert first.tool_calls[0].name == "conversation_search"
    assert first.tool_calls[0].input == {"query": "order number", "limit": 3}
    assert "A-1042" in result
    assert second.stop_reason == "end_turn" and second.tool_calls == ()
    assert second.text == ('[offline model] Earlier in this conversation: "Ann: Hi, my order '
                           'number is A-1042 and I prefer email updates."')


async def test_a_search_that_finds_nothing_says_so() -> None:
    _, second, _ = await recall_round_trip("Do you remember the colour of the bike?")

    assert second.text == ("[offline model] I searched this conversation but found nothing "
                           "earlier about that.")


async def test_the_same_request_gets_the_same_response() -> None:
    first_run = await recall_round_trip(QUESTION)
    second_run = await recall_round_trip(QUESTION)
    assert first_run == second_run


async def test_without_the_search_tool_it_answers_with_what_it_saw() -> None:
    response = await OfflineModel().complete(ModelRequest(model="offline", system="s", messages=[
        PromptMessage("system", "Summary: none."),
        PromptMessage("user", "Ann: hello"),
        PromptMessage("assistant", "hi Ann"),
        PromptMessage("user", "Ann: What did I say earlier?\n\nBob: Good morning all"),
    ]))
    assert response.text == ('[offline model] I read 3 prompt turns. The newest message says: '
                             '"Good morning all"')
    assert response.stop_reason == "end_turn"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0


async def test_a_plain_statement_gets_no_search_even_with_the_tool() -> None:
    search = to_tool_spec(make_conversation_search_tool(InMemoryConversationStore(), "c1"))
    response = await OfflineModel().complete(ModelRequest(
        model="offline", system="s", tools=[search],
        messages=[PromptMessage("user", "Ann: thanks, that is all")]))
    assert response.tool_calls == ()
    assert response.text.endswith('"thanks, that is all"')


async def test_ask_at_name_mentions_the_other_agent() -> None:
    response = await OfflineModel().complete(ModelRequest(model="offline", system="s", messages=[
        PromptMessage("user", "Ann: @ada please ask @bob what the refund policy is?")]))
    assert response.text == "[offline model] @bob what the refund policy is?"
    assert response.tool_calls == ()
