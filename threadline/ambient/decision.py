"""Asking an agent, cheaply, whether to speak: a short prompt, a one-line answer.

The question shows the recent turns and asks for `SPEAK: why` or `QUIET: why`; anything else
(an unreadable answer, a model error) is quiet, with the reason said. `max_tokens` is small
and thinking off: the question must cost a fraction of an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from threadline.agents.llm import ModelRequest
from threadline.agents.summarizer import render_turns
from threadline.errors import ModelError
from threadline.history.model import StoredMessage
from threadline.history.prompt import PromptMessage

QUESTION = """\
You are {name}, an assistant listening in a group conversation where nobody has addressed \
you. {description}Decide whether to say something now. Speak only if someone needs what you \
can give, asked something nobody answered, or you can correct a clear mistake; otherwise stay \
quiet. Answer with one line: "SPEAK: <why>" or "QUIET: <why>"."""
MAX_TOKENS = 60


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether the agent speaks, and why (kept with its reply, and logged either way)."""

    speak: bool
    why: str

    def as_record(self) -> dict[str, object]:
        return {"spoke": self.speak, "why": self.why}


def question(*, name: str, description: str, model: str,
             turns: Sequence[StoredMessage]) -> ModelRequest:
    """The model request that asks whether to speak."""
    about = f"You are there for: {description.strip()} " if description.strip() else ""
    return ModelRequest(
        model=model, system=QUESTION.format(name=name, description=about),
        messages=[PromptMessage("user", f"The conversation, oldest first:\n"
                                        f"{render_turns(turns)}\n\nSpeak or stay quiet?")],
        max_tokens=MAX_TOKENS, thinking="off")


def read_decision(text: str) -> Decision:
    """The model's one line as a decision; anything but `SPEAK:` is quiet."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    verb, _, why = line.partition(":")
    if verb.strip().upper() == "SPEAK":
        return Decision(True, why.strip() or "the model said to speak")
    if verb.strip().upper() == "QUIET":
        return Decision(False, why.strip() or "the model said to stay quiet")
    return Decision(False, f"unreadable answer, stayed quiet: {line[:120]!r}")


def failed(error: ModelError) -> Decision:
    return Decision(False, f"the model could not be asked, stayed quiet: {error}")
