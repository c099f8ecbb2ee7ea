"""Summarizers for the rolling summary: one that asks a cheap model, one that needs no model.

Both take only the turns that became old plus the previous summary (a running summary, so
each turn is summarized once) and render every turn with an absolute UTC time and its speaker,
so "tomorrow" in a turn keeps its meaning. Summary turns are never summarized as turns; their
text arrives as `previous_summary`.

`SummarizerAgent` raises `ModelError` on failure, on an empty reply and on a reply cut off by
the token limit; it never returns an error text as a summary. `ExtractiveSummarizer` keeps the
sentences most likely to matter later (facts people state about themselves, numbers, names,
decisions, open questions), deterministically, for the offline demo and benchmarks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC

import structlog

from threadline.agents.llm import ModelProvider, ModelRequest
from threadline.agents.providers import default_plug
from threadline.errors import ConfigError, ModelError
from threadline.history.model import StoredMessage
from threadline.history.projection import SpeakerLabels
from threadline.history.prompt import PromptMessage
from threadline.history.search import format_turn
from threadline.tracing import spans as tracing

log = structlog.get_logger(__name__)

_TOOL_TEXT_LIMIT = 200

SUMMARY_INSTRUCTIONS = """\
You keep the running summary of a group conversation between people and AI agents, so the \
agents can keep helping after older messages drop out of view. Merge the previous summary \
with the new messages into one updated summary.

Keep, with the name of the person each belongs to:
- facts people stated about themselves: names, order and account numbers, preferences, \
places, dates;
- decisions, agreements and who made them;
- open questions and unfinished requests, and who is waiting for what;
- who is who: the people and agents taking part and their roles.

Write dates as absolute dates (YYYY-MM-DD), never "yesterday" or "tomorrow". Drop greetings, \
small talk and repetition. Never invent anything. Use short plain sentences or bullet points, \
at most {max_words} words. Reply with the summary only."""


def render_turns(turns: Sequence[StoredMessage]) -> str:
    """Turns as summary input: `[YYYY-MM-DD HH:MM UTC] Name: text`, tool calls with results."""
    lines: list[str] = []
    labels = SpeakerLabels(t for t in turns if not t.is_summary)
    for turn in turns:
        if turn.is_summary:
            continue
        lines.append(format_turn(replace(turn, timestamp=turn.timestamp.astimezone(UTC)),
                                 labels))
        for exchange in turn.tool_exchanges:
            arguments = json.dumps(dict(exchange.call.input), sort_keys=True, ensure_ascii=False)
            result = " ".join(exchange.result.content.split())
            if len(result) > _TOOL_TEXT_LIMIT:
                result = result[: _TOOL_TEXT_LIMIT - 3] + "..."
            lines.append(f"  (tool {exchange.call.name} {arguments} -> {result})")
    return "\n".join(lines)


class SummarizerAgent:
    """A `Summarizer` that asks a model (a cheap one by default) for the merged summary."""

    def __init__(
        self,
        provider: ModelProvider,
        *,
        model: str | None = None,
        max_words: int = 250,
        max_tokens: int = 1024,
    ) -> None:
        self._provider = provider
        chosen = model or default_plug().summary_model
        if chosen is None:
            raise ConfigError(f"SummarizerAgent: name its model (model=...); the default "
                              f"provider {default_plug().name!r} has no summary model")
        self._model = chosen
        self._max_words = max_words
        self._max_tokens = max_tokens

    def request(self, turns: Sequence[StoredMessage], previous_summary: str | None) -> ModelRequest:
        """The model request for one summary (public so the prompt can be inspected)."""
        body = (f"Previous summary:\n{previous_summary or '(none yet)'}\n\n"
                f"New messages, oldest first:\n{render_turns(turns)}\n\n"
                "Write the updated summary.")
        return ModelRequest(
            model=self._model,
            system=SUMMARY_INSTRUCTIONS.format(max_words=self._max_words),
            messages=[PromptMessage("user", body)],
            max_tokens=self._max_tokens,
            thinking="off",  # a summary is plain rewriting; thinking would only cost
        )

    async def summarize(self, turns: list[StoredMessage], previous_summary: str | None) -> str:
        new_turns = [t for t in turns if not t.is_summary]
        conversation_id = turns[0].conversation_id if turns else "?"
        bound = log.bind(conversation_id=conversation_id, model=self._model, turns=len(new_turns))
        if not new_turns:
            if previous_summary and previous_summary.strip():
                return previous_summary
            raise ModelError(f"nothing to summarize in conversation {conversation_id!r}: "
                             "no turns and no previous summary were given")
        request = self.request(new_turns, previous_summary)
        with tracing.model_span(request, self._provider, purpose="summary") as span:
            response = await self._provider.complete(request)
            span.answered(response)
        summary = response.text.strip()
        if response.stop_reason == "max_tokens":
            bound.warning("summary_truncated", max_tokens=self._max_tokens)
            raise ModelError(
                f"the summary of {len(new_turns)} turns of conversation {conversation_id!r} was "
                f"cut off at {self._max_tokens} tokens by model {self._model!r}; the turns are "
                "kept as they are. Raise the summarizer's max_tokens or lower max_words."
            )
        if not summary:
            bound.warning("summary_empty")
            raise ModelError(
                f"model {self._model!r} returned an empty summary for {len(new_turns)} turns of "
                f"conversation {conversation_id!r}; the turns are kept as they are."
            )
        bound.debug("summary_written", chars=len(summary))
        return summary


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SELF_FACT = re.compile(
    r"\b(my|mine|i am|i'm|i prefer|prefer|i like|i live|i work|call me|i need|i want)\b",
    re.IGNORECASE)
_DECISION = re.compile(r"\b(decided|agreed|will|deadline|due|plan|let's|must)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=\s)[A-Z][a-z]+")
# The "[when] Name: " in front of a line this summarizer wrote earlier; not part of the fact.
_RENDERED_PREFIX = re.compile(r"^\[[^\]]*\] [^:]{1,80}: ")


def fact_score(sentence: str) -> int:
    """How much a sentence is worth keeping: self-facts, numbers, decisions, questions, names."""
    score = 3 * bool(_SELF_FACT.search(sentence))
    score += 2 * bool(re.search(r"\d", sentence)) + 2 * bool(_DECISION.search(sentence))
    score += bool("?" in sentence) + bool(_NAME.search(sentence))
    return score


class ExtractiveSummarizer:
    """A `Summarizer` without a model: the worthiest sentences, each with when and who.

    Deterministic: the same turns and previous summary give the same text. When everything
    worth keeping exceeds `max_chars`, the lowest-scored lines go first (older before newer on
    a tie); what is kept stays in conversation order, previous summary lines first.
    """

    def __init__(self, *, max_chars: int = 2000) -> None:
        self._max_chars = max_chars

    async def summarize(self, turns: list[StoredMessage], previous_summary: str | None) -> str:
        candidates = [(fact_score(_RENDERED_PREFIX.sub("", line)), line.strip())
                      for line in (previous_summary or "").splitlines() if line.strip()]
        for turn in turns:
            if turn.is_summary:
                continue
            for sentence in _SENTENCE_END.split(turn.content):
                score = fact_score(sentence)
                if score:
                    candidates.append(
                        (score, render_turns([replace(turn, content=sentence.strip())])))
        kept = self._fit(candidates)
        if kept:
            return "\n".join(kept)
        names = sorted({t.participant.display_name for t in turns if not t.is_summary})
        return f"{len(turns)} turns between {', '.join(names) or 'nobody'}; no facts to keep."

    def _fit(self, candidates: list[tuple[int, str]]) -> list[str]:
        ranked = sorted(range(len(candidates)), key=lambda i: (-candidates[i][0], -i))
        chosen: set[int] = set()
        used = 0
        for index in ranked:
            cost = len(candidates[index][1]) + 1
            if used + cost <= self._max_chars:
                chosen.add(index)
                used += cost
        return [candidates[i][1] for i in sorted(chosen)]
