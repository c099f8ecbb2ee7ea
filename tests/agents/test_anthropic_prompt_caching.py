"""Prompt caching: breakpoints on the stable prefix, and the same request is the same bytes."""

from __future__ import annotations

from typing import Any

from tests.fakes.anthropic import FakeAnthropic, fake_anthropic_fixture
from tests.history.transcripts import ANN, BOB, CAROL, SUPPORT, Transcript
from threadline.agents.anthropic_provider import AnthropicProvider
from threadline.agents.llm import ModelRequest, ToolSpec
from threadline.history.assembler import CONTEXT_HEADER, AssemblerOptions, assemble_prompt
from threadline.history.model import ToolCall, ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage
from threadline.history.recall import RECALL_HEADER
from threadline.history.store import ConversationStore

fake = fake_anthropic_fixture()

PERSONA = "You are Ada, the support agent of a small shop. " * 40
SUMMARY = PromptMessage("system", "Summary: Ana ordered mug A-1042 on 1 May; prefers email.")
SEARCH = ToolSpec("conversation_search", "Search this conversation.", {
    "type": "object", "properties": {"query": {"type": "string"},
                                     "limit": {"type": "integer", "default": 5}},
    "required": ["query"]})
ORDERS = ToolSpec("lookup_order", "Look up an order.", {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]})


def request(*turns: PromptMessage, tools: tuple[ToolSpec, ...] = (SEARCH, ORDERS)) -> ModelRequest:
    return ModelRequest(model="claude-test", system=PERSONA, tools=tools,
                        messages=[SUMMARY, *turns])


def marked_paths(body: dict[str, Any]) -> list[str]:
    paths = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    paths += [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        paths += [f"messages[{m}][{b}]" for b, block in enumerate(message["content"])
                  if "cache_control" in block]
    return paths


async def test_breakpoints_sit_on_the_system_prompt_the_history_and_the_newest_turn(
    fake: FakeAnthropic,
) -> None:
    provider = AnthropicProvider(fake.client())
    call = ToolCall("toolu_1", "lookup_order", {"order_id": "A-1042"})
    await provider.complete(request(
        PromptMessage("user", "Where is my mug?"),
        PromptMessage("assistant", "Checking.", tool_exchanges=(
            ToolExchange(call, ToolResult("toolu_1", "shipped")),), in_round=True),
    ))

    body = fake.bodies[0]
    # The system prompt caches the tools before it; the history before the newest turn and the
    # newest turn (here the tool round) each end a cached prefix.
    assert marked_paths(body) == ["system[0]", "system[1]", "messages[1][1]", "messages[2][0]"]
    assert body["messages"][1]["content"][1]["type"] == "tool_use"
    assert body["messages"][2]["content"][0]["type"] == "tool_result"


async def test_identical_inputs_send_identical_bytes(fake: FakeAnthropic) -> None:
    first = AnthropicProvider(fake.client())
    second = AnthropicProvider(fake.client())
    shuffled = ToolSpec("lookup_order", "Look up an order.", {
        "required": ["order_id"], "properties": {"order_id": {"type": "string"}},
        "type": "object"})
    turn = PromptMessage("user", "Where is my mug? 🙂")

    await first.complete(request(turn))
    await first.complete(request(turn))
    await second.complete(request(turn, tools=(SEARCH, shuffled)))

    raws = {r.raw for r in fake.requests}
    assert len(fake.requests) == 3 and len(raws) == 1


async def test_the_next_turn_reads_the_cached_prefix(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client())
    question = PromptMessage("user", "Where is my mug?")

    first = await provider.complete(request(question))
    second = await provider.complete(request(
        question, PromptMessage("assistant", "It shipped."), PromptMessage("user", "Thanks!")))

    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens > 500
    # Everything up to the first turn was cached by the first call and is read back.
    assert second.usage.cache_read_input_tokens >= first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens < first.usage.cache_creation_input_tokens / 10


async def test_caching_can_be_turned_off(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client(), prompt_caching=False)
    await provider.complete(request(PromptMessage("user", "hi")))
    assert marked_paths(fake.bodies[0]) == []
    assert b"cache_control" not in fake.requests[0].raw


async def test_without_a_system_prompt_the_last_tool_carries_the_mark(fake: FakeAnthropic) -> None:
    provider = AnthropicProvider(fake.client())
    await provider.complete(ModelRequest(model="claude-test", system="", tools=(SEARCH, ORDERS),
                                         messages=[PromptMessage("user", "hi")]))
    assert marked_paths(fake.bodies[0]) == ["tools[1]", "messages[0][0]"]


async def test_a_kept_recall_block_takes_the_agent_prompts_breakpoint(
        fake: FakeAnthropic) -> None:
    # Four is the API's maximum: with the summary's breakpoint right after it, the agent's own
    # prompt is the one a kept recall block (a cache point) may go without.
    provider = AnthropicProvider(fake.client())
    await provider.complete(request(
        PromptMessage("user", "Ana: hello"), PromptMessage("assistant", "Hello Ana."),
        PromptMessage("system", "Earlier: Ana paid by card.", cache_point=True),
        PromptMessage("user", "Ana: where is my mug?"), PromptMessage("assistant", "Shipped."),
        PromptMessage("user", "Ana: thanks")))
    assert marked_paths(fake.bodies[0]) == ["system[1]", "messages[2][0]", "messages[3][0]",
                                            "messages[4][0]"]


async def test_a_new_turn_reads_the_history_though_the_recall_block_changed(
        fake: FakeAnthropic) -> None:
    # What changes every turn (the recall block, the immediate context) travels with the
    # newest turn; the breakpoint before it lets the next turn read the history so far.
    provider = AnthropicProvider(fake.client())
    history = [PromptMessage("user", "Ana: my mug A-1042 has not arrived " * 20),
               PromptMessage("assistant", "It left the warehouse on 2 May. " * 20)]
    first = await provider.complete(request(
        *history, PromptMessage("system", "Earlier: Ana paid by card."),
        PromptMessage("user", "Ana: when will it come?")))
    second = await provider.complete(request(
        *history, PromptMessage("user", "Ana: when will it come?"),
        PromptMessage("assistant", "By Friday."), PromptMessage("system", "Earlier: Bo asked."),
        PromptMessage("user", "Ana: thanks")))
    history_tokens = first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens >= 0.9 * history_tokens > 0


async def test_the_per_turn_blocks_sit_after_the_last_stable_breakpoint(
    fake: FakeAnthropic, store: ConversationStore,
) -> None:
    # The assembled prompt as the API receives it: the recall block, the immediate context and
    # the answered turn change every turn, so they must all come after the breakpoint that ends
    # the stable history; otherwise the next turn could not read that history from the cache.
    t = Transcript()
    t.say(CAROL, "FYI my cat is called Miso and she hates the vet")  # addressed to nobody
    for i in range(80):
        t.say(BOB if i % 2 else ANN, f"small talk {i} about the weather and lunch plans")
    t.say(ANN, "@support my order 7781 has not arrived", mentions=("support",))
    t.say(SUPPORT, "Sorry Ann, I am looking into order 7781.")
    t.say(BOB, "@billing was my invoice sent?", mentions=("billing",))
    t.say(ANN, "@support and what is Carol's cat called?", mentions=("support",))
    await t.store_in(store)
    provider = AnthropicProvider(fake.client())
    options = AssemblerOptions(max_turns_to_load=20)

    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", options)
    first = await provider.complete(ModelRequest(model="claude-test", system=PERSONA,
                                                 messages=prompt.messages))

    body = fake.bodies[0]
    *_, history_end, newest = marked_paths(body)
    assert history_end == f"messages[{len(body['messages']) - 2}][0]"
    assert body["messages"][-2] == {"role": "assistant", "content": [
        {"type": "text", "text": "Sorry Ann, I am looking into order 7781.",
         "cache_control": {"type": "ephemeral"}}]}
    tail = [block["text"] for block in body["messages"][-1]["content"]]
    assert tail[0].startswith(RECALL_HEADER) and "Miso" in tail[0]
    assert tail[1].startswith(CONTEXT_HEADER) and "invoice" in tail[1]
    assert tail[2] == "Ann: @support and what is Carol's cat called?"
    assert newest == f"messages[{len(body['messages']) - 1}][2]"

    # The next turn recalls something else; the history up to its end is still read back.
    t.say(SUPPORT, "Carol's cat is called Miso.")
    t.say(ANN, "@support thanks, and my lunch plans?", mentions=("support",))
    await store.append_many(t.turns[-2:])
    prompt = await assemble_prompt(store, t.conversation_id, "support", "Support", options)
    second = await provider.complete(ModelRequest(model="claude-test", system=PERSONA,
                                                  messages=prompt.messages))
    assert second.usage.cache_read_input_tokens > 0
    changed = first.usage.cache_creation_input_tokens - second.usage.cache_read_input_tokens
    assert 0 < changed < first.usage.cache_creation_input_tokens / 3
