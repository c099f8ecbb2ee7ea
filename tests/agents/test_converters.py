"""Converters to the Anthropic and OpenAI shapes, checked with each SDK's own types."""

from __future__ import annotations

import json

from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from threadline.agents.convert import to_anthropic, to_openai
from threadline.history import ToolCall, ToolExchange, ToolResult
from threadline.history.prompt import PromptMessage

EXCHANGE = ToolExchange(ToolCall("toolu_1", "lookup", {"b": 2, "a": 1}),
                        ToolResult("toolu_1", "found it", is_error=False))
PROMPT = [
    PromptMessage("system", "Summary of the earlier conversation:\nAnn ordered 4412."),
    PromptMessage("user", "Ann: where is my order?"),
    PromptMessage("assistant", "Let me look.", (EXCHANGE,), in_round=True),
    PromptMessage("assistant", "It shipped."),
    PromptMessage("system", "Earlier in this conversation: ..."),
    PromptMessage("user", "Ann: thanks"),
]


def test_anthropic_shape_passes_the_sdk_types() -> None:
    system, turns = to_anthropic(PROMPT)
    TypeAdapter(list[MessageParam]).validate_python(turns)
    assert system == "Summary of the earlier conversation:\nAnn ordered 4412."
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[1]["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "lookup",
                                      "input": {"a": 1, "b": 2}}
    assert turns[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1",
                                    "content": "found it", "is_error": False}]
    # the later system turn (recall) travels as text in the user turn, keeping the prefix stable
    assert turns[4]["content"][0]["text"].startswith("Earlier in this conversation")
    assert json.dumps(to_anthropic(PROMPT)) == json.dumps((system, turns))  # deterministic


def test_openai_shape_passes_the_sdk_types() -> None:
    converted = to_openai(PROMPT)
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(converted)
    call = converted[2]
    assert call["tool_calls"][0]["function"] == {"name": "lookup",
                                                 "arguments": '{"a": 1, "b": 2}'}
    assert converted[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "found it"}


def test_openai_shape_has_one_leading_system_message_and_recall_as_user_text() -> None:
    converted = to_openai(PROMPT, system="You are Ada.")
    assert converted[0] == {"role": "system", "content": "You are Ada.\n\nSummary of the "
                                                         "earlier conversation:\nAnn ordered 4412."}
    assert [m["role"] for m in converted] == ["system", "user", "assistant", "tool", "assistant",
                                              "user", "user"]
    assert converted[5]["content"].startswith("Earlier in this conversation")
    assert json.dumps(to_openai(PROMPT, system="x")) == json.dumps(to_openai(PROMPT, system="x"))


def test_a_stored_turns_text_follows_its_tool_results_and_closes_the_round() -> None:
    # A stored turn's text is what the agent said after its tools; sent as written, the round
    # is closed, so a thinking model does not take the next question for its continuation.
    stored = [PromptMessage("user", "Ann: where is my order?"),
              PromptMessage("assistant", "It shipped on Monday.", (EXCHANGE,)),
              PromptMessage("user", "Ann: thanks")]
    _, turns = to_anthropic(stored)
    TypeAdapter(list[MessageParam]).validate_python(turns)
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in turns[1]["content"]] == ["tool_use"]
    assert turns[3]["content"] == [{"type": "text", "text": "It shipped on Monday."}]
    assert turns[4]["content"] == [{"type": "text", "text": "Ann: thanks"}]
    converted = to_openai(stored)
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(converted)
    assert [m["role"] for m in converted] == ["user", "assistant", "tool", "assistant", "user"]
    assert converted[1]["content"] is None
    assert converted[3] == {"role": "assistant", "content": "It shipped on Monday."}
