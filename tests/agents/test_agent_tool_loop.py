"""The agent loop: tools run and are stored with their results; limits stop a looping model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.interceptors.scripted import ANN, ScriptedModel, say, tool_call
from threadline.agents.agent import Agent, Answering
from threadline.agents.llm import ModelRequest, ModelResponse
from threadline.backends.sql import SqlConversationStore
from threadline.history.projection import TRANSCRIPT_NOTE


@pytest.fixture
async def sqlite_store(sqlite_url: str) -> AsyncIterator[SqlConversationStore]:
    async with SqlConversationStore(sqlite_url) as store:
        yield store


async def lookup_order(order_id: int) -> str:
    """Look up an order's delivery status."""
    return f"order {order_id} shipped on 2024-03-02"


async def broken_inventory(sku: str) -> str:
    """Check stock for a product."""
    raise RuntimeError(f"inventory service refused {sku}")


def tools_then_text(*calls_per_round: list[tuple[str, dict[str, object]]],
                    final: str = "done") -> ScriptedModel:
    """A model that asks for these tool rounds, one per call, then answers `final`."""
    rounds = list(calls_per_round)

    def reply(request: ModelRequest) -> ModelResponse:
        if rounds:
            return ModelResponse(text="", stop_reason="tool_use",
                                 tool_calls=tuple(tool_call(n, **i) for n, i in rounds.pop(0)))
        return ModelResponse(text=final)

    return ScriptedModel(reply)


async def test_tool_round_trip_is_sent_back_and_stored(sqlite_store: SqlConversationStore) -> None:
    model = tools_then_text([("lookup_order", {"order_id": 4412})],
                            final="Your order 4412 shipped on 2 March.")
    agent = Agent(name="support", system_prompt="You help.", tools=[lookup_order],
                  conversation_history=sqlite_store, provider=model)
    result = await agent.invoke(say("Where is my order 4412?", conversation_id="c1"))

    assert result.output == "Your order 4412 shipped on 2 March."
    assert [e.result.content for e in result.tool_exchanges] == ["order 4412 shipped on 2024-03-02"]
    assert result.model_calls == 2 and result.stop_reason == "end_turn"
    # The second request carried the call and its result as one assistant turn.
    second = model.requests[1]
    assert second.system == f"You help.\n\n{TRANSCRIPT_NOTE}"
    assert {t.name for t in second.tools} == {"lookup_order", "conversation_search"}
    assert second.messages[-1].role == "assistant"
    assert second.messages[-1].tool_exchanges == result.tool_exchanges
    stored = await sqlite_store.get("c1")
    assert [m.participant.id for m in stored] == ["U_ANN", "support"]
    assert stored[1].tool_exchanges == result.tool_exchanges
    assert stored[1].content == result.output


async def test_a_failing_tool_becomes_an_error_result(sqlite_store: SqlConversationStore) -> None:
    model = tools_then_text([("broken_inventory", {"sku": "X1"}), ("no_such_tool", {})],
                            final="Sorry, I cannot check stock right now.")
    agent = Agent(name="support", tools=[broken_inventory], conversation_history=sqlite_store,
                  provider=model)
    result = await agent.invoke(say("Is X1 in stock?", conversation_id="c1"))

    failed, unknown = result.tool_exchanges
    assert failed.result.is_error and "inventory service refused X1" in failed.result.content
    assert unknown.result.is_error and "no tool named 'no_such_tool'" in unknown.result.content
    assert result.output == "Sorry, I cannot check stock right now."
    stored = await sqlite_store.get("c1")
    assert [e.result.is_error for e in stored[-1].tool_exchanges] == [True, True]


async def test_max_tool_rounds_stops_a_model_that_never_stops(
    sqlite_store: SqlConversationStore,
) -> None:
    model = ScriptedModel(lambda r: ModelResponse(
        text="", stop_reason="tool_use", tool_calls=(tool_call("lookup_order", order_id=1),)))
    agent = Agent(name="support", tools=[lookup_order], conversation_history=sqlite_store,
                  provider=model, answering=Answering(max_tool_rounds=3))
    result = await agent.invoke(say("loop forever", conversation_id="c1"))

    assert result.stop_reason == "max_tool_rounds"
    assert result.model_calls == 4 and len(model.requests) == 4
    assert len(result.tool_exchanges) == 3  # the 4th round's call was never run nor stored
    assert "limit of tool steps" in result.output
    stored = await sqlite_store.get("c1")
    assert len(stored[-1].tool_exchanges) == 3


async def test_total_timeout_stops_the_turn_and_keeps_finished_tools(
    sqlite_store: SqlConversationStore,
) -> None:
    never = asyncio.Event()

    async def reply(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:  # first call: ask for one tool
            return ModelResponse(text="Checking.", stop_reason="tool_use",
                                 tool_calls=(tool_call("lookup_order", order_id=7),))
        await never.wait()  # the model hangs on the second call
        raise AssertionError("unreachable")

    agent = Agent(name="support", tools=[lookup_order], conversation_history=sqlite_store,
                  provider=ScriptedModel(reply), answering=Answering(timeout=0.2))
    result = await agent.invoke(say("where is 7?", conversation_id="c1"))

    assert result.stop_reason == "timeout"
    assert result.output == "Checking."
    assert [e.call.input for e in result.tool_exchanges] == [{"order_id": 7}]
    stored = await sqlite_store.get("c1")
    assert stored[-1].tool_exchanges == result.tool_exchanges


async def test_conversation_search_is_scoped_to_the_conversation(
    sqlite_store: SqlConversationStore,
) -> None:
    await sqlite_store.append(say("my locker code is 1234", who=ANN, conversation_id="c1"))
    await sqlite_store.append(say("my locker code is 9999", who=ANN, conversation_id="c2"))
    model = tools_then_text([("conversation_search", {"query": "locker code"})], final="ok")
    agent = Agent(name="support", conversation_history=sqlite_store, provider=model)
    result = await agent.invoke(say("what was my locker code?", conversation_id="c1"))

    found = result.tool_exchanges[0].result.content
    assert "9999" not in found
    # The c1 turn is already in the prompt the model saw, so the search does not repeat it.
    assert any("1234" in m.content for m in model.requests[0].messages)
    assert "1234" not in found


async def test_outbound_turn_lands_in_the_same_thread_and_names_who_it_addresses(
    sqlite_store: SqlConversationStore,
) -> None:
    model = ScriptedModel(lambda r: ModelResponse(text="@Billing can you refund Ann?"))
    agent = Agent(name="support", conversation_history=sqlite_store, provider=model)
    inbound = say("refund please", conversation_id="c1", scope="thread", thread_id="t9",
                  channel_id="C1", channel_name="help")
    result = await agent.invoke(inbound)

    outbound = result.outbound
    assert outbound is not None
    assert outbound.participant.kind == "agent" and outbound.participant.id == "support"
    assert outbound.scope == "thread" and outbound.metadata.thread_id == "t9"
    assert (outbound.metadata.channel_id, outbound.metadata.channel_name) == ("C1", "help")
    assert outbound.metadata.mentions == ("billing",)
    assert outbound.metadata.reply_to_participant_id == "U_ANN"
    assert outbound.metadata.reply_to_message_id == inbound.metadata.message_id
    stored = await sqlite_store.get("c1")
    assert stored[-1].id == outbound.id and stored[-1].metadata.thread_id == "t9"


async def test_the_model_sees_the_shared_history(sqlite_store: SqlConversationStore) -> None:
    model = ScriptedModel()
    agent = Agent(name="support", conversation_history=sqlite_store, provider=model,
                  system_prompt="Be brief.")
    await agent.invoke(say("@support my name is Ann", conversation_id="c1"))
    await agent.invoke(say("@support what is my name?", conversation_id="c1"))

    prompt = model.requests[-1].messages
    assert [m.role for m in prompt] == ["user", "assistant", "user"]
    assert "my name is Ann" in prompt[0].content
    assert "what is my name?" in prompt[-1].content
