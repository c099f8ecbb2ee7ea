"""A deterministic, network-free model that exercises the whole agent loop (demo and tests).

Every reply starts with "[offline model]", so nobody mistakes it for a real model. Given the
same request it always gives the same response. What it does, in order:

1. Right after a `conversation_search` round (the newest prompt turn is its own assistant turn
   carrying that tool's result), it answers by quoting the line that shares the most words
   with the question (never the question itself): from the result first, then from what the
   prompt already shows (the search leaves that out), or says the search found nothing.
2. Right after a round of any other tool, it answers with that tool's result: "TOOL said:
   RESULT" (a call an approver denied says so in its result).
3. When the newest user text says `use TOOL {json}`, it calls TOOL with that JSON object as
   its input (`use TOOL` ending the text: an empty input), so tools and approvals can be tried
   without a key. A tool it was not offered, or input that is not a JSON object, is answered with
   what went wrong and the tools it has.
4. When the newest user text says "ask @Name ...", it replies "@Name ..." with the rest of the
   request, so multi-agent hops can be tested.
5. When the newest user text looks like recall ("what did I say about ...", "remember",
   "earlier", "before", or any question mark) and a `conversation_search` tool is offered, it
   calls that tool with the question's key words (stop words dropped) and a limit of 3.
6. Otherwise it says how many prompt turns it saw and quotes the newest user text.

The newest user text is the last paragraph of the last user turn, without the speaker label
("Ana: ") that the projection puts in front of other participants' turns.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from threadline.agents.llm import ModelRequest, ModelResponse, ModelUsage
from threadline.agents.providers import ProviderPlug, ProviderSettings
from threadline.history.model import ToolCall
from threadline.history.prompt import PromptMessage
from threadline.history.search import ENGLISH_STOP_WORDS, SearchQuery, stem_words
from threadline.history.tokens import default_counter

SEARCH_TOOL = "conversation_search"
LABEL = "[offline model]"
MODEL_NAME = "offline"
_QUOTE_LIMIT = 300

_RECALL = re.compile(
    r"\b(what did (i|we|you) (say|tell|mention)|remember|recall|earlier|before|previously|"
    r"last time|did i (say|tell|mention))\b",
    re.IGNORECASE,
)
# Words that ask for recall but say nothing about what to find.
_RECALL_WORDS = frozenset({"earlier", "before", "previously", "recall", "mention", "mentioned",
                           "last", "time", "again", "ago"})
# The name is followed by its JSON input or ends the text ("I use the Pro plan" calls nothing).
_USE = re.compile(r"\buse\s+([a-zA-Z0-9_-]{1,64})(?=\s*(?:\{|$))", re.IGNORECASE)
_ASK = re.compile(r"\bask\s+@([\w.-]+)[,:]?\s*(.*)", re.IGNORECASE | re.DOTALL)
_MENTION = re.compile(r"@([\w.-])")
_SPEAKER_LABEL = re.compile(r"^[^:\n]{1,80}: ")
_RESULT_LINE = re.compile(r"^(?:\[[^\]]*\] )?[^:\n\[]{1,80}: (.*)$")  # "Ann: ..." (dated or not)


class OfflineModel:
    """A `ModelProvider` that answers by fixed rules, without any network (see the module)."""

    provider_name = "offline"  # `gen_ai.provider.name` on its traces

    async def complete(self, request: ModelRequest) -> ModelResponse:
        question = newest_user_text(request.messages)
        terms = SearchQuery.parse(question, stop_words=ENGLISH_STOP_WORDS | _RECALL_WORDS).terms
        last = request.messages[-1] if request.messages else None
        search = _search_result(last)
        if search is not None:
            shown = "\n".join(m.content for m in request.messages[:-1])
            return self._reply(request, _answer_from_search(question, terms, f"{search}\n{shown}"))
        ran = _tool_result(last)
        if ran is not None:
            return self._reply(request, f"{LABEL} {ran[0]} said: {_quoted(ran[1])}")
        used = _USE.search(question)
        if used:
            return self._use(request, used.group(1), question[used.end():])
        asked = _ASK.search(question)
        if asked:
            rest = asked.group(2).strip() or "can you help with this?"
            return self._reply(request, f"{LABEL} @{asked.group(1)} {rest}")
        offered = any(spec.name == SEARCH_TOOL for spec in request.tools)
        if offered and terms and (_RECALL.search(question) or "?" in question):
            query = " ".join(terms)
            digest = hashlib.sha256(f"{len(request.messages)}:{query}".encode()).hexdigest()
            call = ToolCall(id=f"toolu_offline_{digest[:16]}", name=SEARCH_TOOL,
                            input={"query": query, "limit": 3})
            return self._reply(request, f"{LABEL} Let me search the conversation for: {query}",
                               calls=(call,))
        seen = sum(1 for m in request.messages if m.role != "system")
        quoted = _quoted(question) if question else "(nothing yet)"
        return self._reply(request, f"{LABEL} I read {seen} prompt turns. "
                                    f"The newest message says: \"{quoted}\"")

    def _use(self, request: ModelRequest, name: str, rest: str) -> ModelResponse:
        """Call the tool a person named (`use TOOL {json}`), or say why it cannot."""
        offered = [spec.name for spec in request.tools]
        if name not in offered:
            return self._reply(request, f"{LABEL} I have no tool named {name}. The tools I "
                                        f"have: {', '.join(offered) or 'none'}.")
        text = rest.strip()
        arguments = _json_object(text) if text else {}
        if arguments is None:
            return self._reply(request, f"{LABEL} The input for {name} must be a JSON object "
                                        f"after its name, as in: use {name} "
                                        '{"key": "value"}')
        digest = hashlib.sha256(f"{len(request.messages)}:{name}:{text}".encode()).hexdigest()
        call = ToolCall(id=f"toolu_offline_{digest[:16]}", name=name, input=arguments)
        return self._reply(request, f"{LABEL} Using {name}.", calls=(call,))

    def _reply(
        self, request: ModelRequest, text: str, *, calls: tuple[ToolCall, ...] = ()
    ) -> ModelResponse:
        counter = default_counter()
        prompt = [request.system, *(m.content for m in request.messages)]
        return ModelResponse(
            text=text,
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
            usage=ModelUsage(input_tokens=sum(counter.count(p) for p in prompt),
                             output_tokens=counter.count(text)),
            model=MODEL_NAME,
        )


def newest_user_text(messages: Sequence[PromptMessage]) -> str:
    """The last paragraph of the last user turn, without its speaker label."""
    users = [m for m in messages if m.role == "user"]
    if not users:
        return ""
    paragraph = users[-1].content.strip().split("\n\n")[-1].strip()
    return _SPEAKER_LABEL.sub("", paragraph, count=1)


def _search_result(message: PromptMessage | None) -> str | None:
    if message is None or message.role != "assistant":
        return None
    results = [e.result.content for e in message.tool_exchanges if e.call.name == SEARCH_TOOL]
    return results[-1] if results else None


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object `text` starts with (words after it are ignored); None if it has none."""
    try:
        found = json.JSONDecoder().raw_decode(text)[0]
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _tool_result(message: PromptMessage | None) -> tuple[str, str] | None:
    """The name and result of the last tool call in the newest (assistant) turn, if any."""
    if message is None or message.role != "assistant" or not message.tool_exchanges:
        return None
    exchange = message.tool_exchanges[-1]
    return exchange.call.name, exchange.result.content


def _answer_from_search(question: str, terms: Sequence[str], result: str) -> str:
    wanted = set(stem_words(" ".join(terms)))
    best: tuple[int, str] | None = None
    for line in result.splitlines():
        match = _RESULT_LINE.match(line.strip())
        if not match or match.group(1).strip() == question.strip() or LABEL in match.group(1):
            continue  # the question itself, or a canned answer (quotes of quotes of quotes)
        score = len(wanted & set(stem_words(match.group(1))))
        if score and (best is None or score > best[0]):
            best = (score, line.strip())
    if best is None:
        return f"{LABEL} I searched this conversation but found nothing earlier about that."
    return f"{LABEL} Earlier in this conversation: \"{_quoted(best[1])}\""


def _quoted(text: str) -> str:
    """Text to quote in a reply: on one line, shortened, and addressing nobody (a quoted
    "@billing" would hand the turn to billing, and its canned answer to the next agent)."""
    flat = _MENTION.sub(r"\1", " ".join(text.split()))
    return flat if len(flat) <= _QUOTE_LIMIT else flat[: _QUOTE_LIMIT - 3] + "..."


class OfflineSettings(ProviderSettings):
    """`provider: offline`: nothing to set."""

    type: Literal["offline"] = "offline"
    """offline: canned answers, for trying things out (no key, no network)."""


def _build(settings: OfflineSettings) -> OfflineModel:
    return OfflineModel()


async def _check(settings: OfflineSettings) -> str:
    return "the offline model answers with canned text (set a provider for real answers)"


PLUG = ProviderPlug(name="offline", settings=OfflineSettings, build=_build, check=_check,
                    default_model=MODEL_NAME)
