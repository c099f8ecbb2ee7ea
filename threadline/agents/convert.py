"""Converters from prompt messages to provider shapes (Anthropic Messages, OpenAI chat).

Both are deterministic byte for byte for the same input (sorted JSON), so a provider's prompt
cache sees the same prefix on every turn.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from threadline.history.prompt import PromptImage, PromptMessage


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _base64(image: PromptImage) -> str:
    return base64.b64encode(image.data).decode("ascii")


def anthropic_image(image: PromptImage) -> dict[str, Any]:
    """An image block of the Messages API (base64 source)."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                        "data": _base64(image)}}


def openai_image(image: PromptImage) -> dict[str, Any]:
    """An `image_url` content part of the chat API, carrying the image as a data URL."""
    return {"type": "image_url",
            "image_url": {"url": f"data:{image.media_type};base64,{_base64(image)}"}}


def to_anthropic(messages: Sequence[PromptMessage], *, mark_cache_points: bool = False
                 ) -> tuple[str, list[dict[str, Any]]]:
    """System text apart, then user/assistant turns with tool_use and tool_result blocks.

    Leading system turns (the agent's prompt, the summary) form the system text, a stable prefix
    for prompt caching; a system turn later on (the recall block) becomes a text block of the
    user turn it precedes, so it does not invalidate the cached prefix. With
    `mark_cache_points`, the last block of a `cache_point` turn carries an ephemeral
    `cache_control` breakpoint.

    An assistant turn with tool exchanges becomes its tool_use blocks (in the round being
    answered, after its thinking and the text written before them), followed by a user turn of
    the matching tool_result blocks; a stored turn's text, said after its tools, follows as an
    assistant turn, closing that round (a thinking model would otherwise take a later question
    for the round's continuation). Consecutive same-role turns are merged, so roles alternate
    as the Messages API requires.
    """
    leading = 0
    while leading < len(messages) and messages[leading].role == "system":
        leading += 1
    system = "\n\n".join(m.content for m in messages[:leading] if m.content)
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in messages[leading:]:
        blocks: list[dict[str, Any]] = [anthropic_image(i) for i in message.images]
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        if message.role == "assistant" and message.tool_exchanges:
            add("assistant", _anthropic_round(message))
            results: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": e.call.id, "content": e.result.content,
                 "is_error": e.result.is_error}
                for e in message.tool_exchanges
            ]
            add("user", results)
            if message.content and not message.in_round:
                add("assistant", [{"type": "text", "text": message.content}])
        elif blocks:
            if mark_cache_points and message.cache_point:
                blocks[-1]["cache_control"] = {"type": "ephemeral"}
            add("user" if message.role == "system" else message.role, blocks)
    return system, turns


def _anthropic_round(message: PromptMessage) -> list[dict[str, Any]]:
    """An assistant turn of a tool round as the model wrote it: each call's thinking blocks
    (unaltered, as the API requires within the round) before it, the text after the first."""
    blocks: list[dict[str, Any]] = []
    for number, exchange in enumerate(message.tool_exchanges):
        call = exchange.call
        blocks += [dict(r.block) for r in call.reasoning if r.format == "anthropic"]
        if number == 0 and message.content and message.in_round:
            blocks.append({"type": "text", "text": message.content})
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                       "input": json.loads(_json(dict(call.input)))})
    return blocks


def to_openai(messages: Sequence[PromptMessage], *, system: str = "") -> list[dict[str, Any]]:
    """OpenAI chat messages: tool calls as `tool_calls`, each result as a `tool` message.

    `system` (the agent's prompt) and the leading system turns (the summary) form one system
    message, since many local servers' chat templates accept only one, and only first; a later
    system turn (the recall block) travels as a user message, as in `to_anthropic`.
    """
    leading = 0
    while leading < len(messages) and messages[leading].role == "system":
        leading += 1
    parts = [system, *(m.content for m in messages[:leading])]
    system_text = "\n\n".join(p for p in parts if p)
    converted: list[dict[str, Any]] = (
        [{"role": "system", "content": system_text}] if system_text else [])
    for message in messages[leading:]:
        if message.role == "assistant" and message.tool_exchanges:
            turn: dict[str, Any] = {
                "role": "assistant",
                "content": (message.content or None) if message.in_round else None,
                "tool_calls": [
                    {"id": e.call.id, "type": "function",
                     "function": {"name": e.call.name, "arguments": _json(dict(e.call.input))}}
                    for e in message.tool_exchanges
                ],
            }
            # Servers that think (DeepSeek, vLLM/llama.cpp reasoning parsers) want their
            # reasoning back within the tool round it was written for.
            reasoning = "".join(str(r.block.get("reasoning_content", ""))
                                for e in message.tool_exchanges for r in e.call.reasoning
                                if r.format == "openai")
            if reasoning:
                turn["reasoning_content"] = reasoning
            converted.append(turn)
            converted += [
                {"role": "tool", "tool_call_id": e.call.id, "content": e.result.content}
                for e in message.tool_exchanges
            ]
            if message.content and not message.in_round:  # said after the tools
                converted.append({"role": "assistant", "content": message.content})
        elif message.images:
            seen: list[dict[str, Any]] = [openai_image(i) for i in message.images]
            if message.content:
                seen.append({"type": "text", "text": message.content})
            converted.append({"role": "user", "content": seen})
        elif message.content:
            role = "user" if message.role == "system" else message.role
            converted.append({"role": role, "content": message.content})
    return converted
