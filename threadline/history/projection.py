"""Projection: a shared, multi-party history as one agent sees it.

The agent's own turns are `assistant`; humans are `user`, prefixed with their display name;
other agents are `user`, prefixed `Name (agent)`; system turns stay `system`. The prefix is
always ours, so a user who types "Bot (agent): ..." is still that user. Another agent's tool
activity is never shown as tool calls (this agent may not have those tools): it is dropped or,
when asked for, kept as one line of text. Consecutive turns of one role are merged and the
conversation starts with a user turn, as providers that require alternation expect.
System turns inside the conversation stay in place; converters decide how a provider sees them.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptMessage

OPENING_PLACEHOLDER = "(earlier conversation omitted)"


def speaker_label(message: StoredMessage) -> str:
    name = message.participant.display_name
    return f"{name} (agent)" if message.participant.kind == "agent" else name


def project_turn(message: StoredMessage, agent_id: str, *, tool_trace: bool) -> PromptMessage:
    """One stored turn from `agent_id`'s point of view."""
    participant = message.participant
    if participant.kind == "agent" and participant.id == agent_id:
        # Reasoning belonged to the tool round it was written in; a later prompt drops it.
        return PromptMessage("assistant", message.content,
                             tuple(e.without_reasoning() for e in message.tool_exchanges))
    if participant.kind == "system":
        return PromptMessage("system", message.content)
    text = f"{speaker_label(message)}: {message.content}"
    if tool_trace and message.tool_exchanges:
        used = ", ".join(dict.fromkeys(e.call.name for e in message.tool_exchanges))
        text += f"\n(Used {used})"
    return PromptMessage("user", text)


def merge_roles(messages: Sequence[PromptMessage]) -> list[PromptMessage]:
    """Leading system turns, then same-role neighbours merged, starting with a user turn.

    System turns after the first conversation turn (the recall block, a "user joined" notice)
    stay where they are. Same-role neighbours are joined with a blank line; an assistant turn
    carrying tool activity is kept apart from the text after it, as its results sit in between.
    """
    leading = 0
    while leading < len(messages) and messages[leading].role == "system":
        leading += 1
    merged: list[PromptMessage] = []
    for message in messages[leading:]:
        previous = merged[-1] if merged else None
        if (previous is not None and previous.role == message.role != "system"
                and not previous.tool_exchanges):
            merged[-1] = PromptMessage(
                message.role, f"{previous.content}\n\n{message.content}".strip(),
                message.tool_exchanges,
            )
        else:
            merged.append(message)
    first_turn = next((m for m in merged if m.role != "system"), None)
    if first_turn is not None and first_turn.role == "assistant":
        merged.insert(merged.index(first_turn), PromptMessage("user", OPENING_PLACEHOLDER))
    return list(messages[:leading]) + merged
