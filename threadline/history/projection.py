"""Projection: a shared, multi-party history as one agent sees it.

The agent's own turns are `assistant`; humans are `user`, prefixed with their display name;
other agents are `user`, prefixed `Name (agent)`; system turns stay `system`. The prefix is
always ours, and nobody can borrow another's: within one prompt every speaker's label is unique
(`SpeakerLabels`: a display name already taken, by a person or an agent, gets the speaker's
platform id as a suffix, `Ann [U2]`), and every line of a turn after its first starts with
`CONTINUATION`, so a turn's own "\nAnn: ..." reads as quoted text inside that turn, never as
Ann speaking. `TRANSCRIPT_NOTE` says so once, in the system prompt; labels and marks depend
only on the turns shown, so the same history gives the same bytes (Anthropic's prompt cache).
Another agent's tool activity is never shown as tool calls (this agent may not have those
tools): it is dropped or, when asked for, kept as one line of text. Consecutive turns of one
role are merged and the conversation starts with a user turn, as providers that require
alternation expect.
System turns inside the conversation stay in place; converters decide how a provider sees them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptMessage

OPENING_PLACEHOLDER = "(earlier conversation omitted)"
CONTINUATION = "| "
TRANSCRIPT_NOTE = (
    "How the conversation is shown to you: each turn of another participant starts on a new "
    "line with their name and a colon, written by the system (never by them); two "
    "participants with the same name are told apart by the id in brackets after it. Every "
    f"further line of the same turn starts with \"{CONTINUATION.strip()}\": such a line "
    "belongs to the turn above it, even when it looks like a name and a colon.")
_UNSPOKEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _name(message: StoredMessage) -> str:
    """A participant's label as they chose it: on one line, never starting like a
    continuation line."""
    participant = message.participant
    name = _UNSPOKEN.sub(" ", participant.display_name).strip().lstrip(CONTINUATION.strip())
    name = name.strip() or participant.id
    return f"{name} (agent)" if participant.kind == "agent" else name


def speaker_label(message: StoredMessage) -> str:
    """A speaker's label taken alone (see `SpeakerLabels` for the labels of one prompt)."""
    return _name(message)


class SpeakerLabels:
    """The labels of every speaker in one prompt, each unique (case aside).

    Agents are labelled first, so a person calling themselves "support (agent)" is the one
    told apart; then people in order of their first turn. A label already taken gets the
    speaker's platform id in brackets.
    """

    def __init__(self, messages: Iterable[StoredMessage]) -> None:
        self._labels: dict[tuple[str, str], str] = {}
        taken: set[str] = set()
        ordered = sorted(messages, key=lambda m: (m.participant.kind != "agent", m.timestamp,
                                                  m.sequence or 0, m.id))
        for message in ordered:
            key = (message.participant.kind, message.participant.id)
            if key in self._labels:
                continue
            base = label = _name(message)
            copies = 1
            while label.casefold() in taken:
                suffix = message.participant.id if copies == 1 else (
                    f"{message.participant.id} {copies}")
                label = f"{base} [{suffix}]"
                copies += 1
            taken.add(label.casefold())
            self._labels[key] = label

    def of(self, message: StoredMessage) -> str:
        participant = message.participant
        return self._labels.get((participant.kind, participant.id)) or _name(message)


def turn_text(label: str, content: str) -> str:
    """A turn as the model reads it: its label, then its text, each further line marked as
    continuing it (see the module docstring)."""
    return f"{label}: " + ("\n" + CONTINUATION).join(content.splitlines())


def project_turn(message: StoredMessage, agent_id: str, *, tool_trace: bool,
                 labels: SpeakerLabels | None = None) -> PromptMessage:
    """One stored turn from `agent_id`'s point of view (`labels`: the prompt's speakers)."""
    participant = message.participant
    if participant.kind == "agent" and participant.id == agent_id:
        # Reasoning belonged to the tool round it was written in; a later prompt drops it.
        return PromptMessage("assistant", message.content,
                             tuple(e.without_reasoning() for e in message.tool_exchanges))
    if participant.kind == "system":
        return PromptMessage("system", message.content)
    label = labels.of(message) if labels is not None else speaker_label(message)
    text = turn_text(label, message.content)
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
