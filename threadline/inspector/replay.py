"""Replay: answer a recorded turn again, with today's options or another model, post nothing.

Two ways to rebuild what the model sees:
- `current`: the prompt is assembled again with the agent's current options (budget,
  recall, system prompt, tools) from the history as it stood when the turn arrived (turns up
  to the inbound turn; later turns and summaries are invisible);
- `recorded`: the recorded prompt, message for message, to compare models on the same input.

A replay makes one model call and runs no tool (tools can act on the world: send a mail, open
a ticket); the tool calls the model asks for are shown. Nothing is stored and nothing reaches
a platform: the agent's interceptors, capture and delivery are not involved.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest
from threadline.agents.search_tool import make_conversation_search_tool
from threadline.agents.tools import to_tool_spec
from threadline.errors import ConfigError
from threadline.history.assembler import assemble_prompt
from threadline.history.model import ToolExchange
from threadline.history.prompt import PromptMessage
from threadline.history.store import ConversationStore
from threadline.history.tokens import default_counter
from threadline.inspector.record import ReplyRecord, prompt_parts
from threadline.inspector.records import ReplyRecords
from threadline.inspector.redaction import Redactor

Mode = Literal["current", "recorded"]
MODES: tuple[Mode, ...] = ("current", "recorded")


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """A recorded turn and its replay, ready to be shown side by side."""

    record: ReplyRecord
    mode: Mode
    model: str
    system_prompt: str
    parts: list[dict[str, Any]]
    reply: str
    tool_calls: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int]
    latency_ms: float


def recorded_messages(record: ReplyRecord) -> list[PromptMessage]:
    """The prompt messages a record holds, as the agent sent them on its first call."""
    parts = (record.detail or {}).get("prompt", {}).get("parts", [])
    return [PromptMessage(p["role"], p["content"], tuple(
        ToolExchange.from_dict(e) for e in p.get("tool_exchanges", []))) for p in parts]


class Replayer:
    """Replays records of `agents` (built from the current settings) against `store`."""

    def __init__(self, *, records: ReplyRecords, store: ConversationStore,
                 agents: Sequence[Agent], redactor: Redactor | None = None) -> None:
        self.records = records
        self.store = store
        self.agents: Mapping[str, Agent] = {a.name: a for a in agents}
        self.redactor = redactor or Redactor()

    async def replay(self, record_id: str, *, model: str | None = None,
                     mode: Mode = "current") -> ReplayOutcome:
        record = await self.records.get(record_id)
        if record is None:
            raise ConfigError(f"no reply record {record_id!r}; `threadline inspect list` "
                              "shows the ids")
        agent = self.agents.get(record.agent)
        if agent is None:
            raise ConfigError(f"record {record.id} was made by agent {record.agent!r}, which "
                              f"the current config does not define ({', '.join(self.agents)})")
        if mode == "recorded":
            messages = recorded_messages(record)
        else:
            messages = await self._assembled(agent, record)
        search = make_conversation_search_tool(self.store, record.conversation_id)
        request = ModelRequest(
            model=model or agent.model, system=agent.system_text, messages=messages,
            tools=[to_tool_spec(t) for t in (*agent.tools, search)],
            max_tokens=agent.max_tokens)
        started = time.perf_counter()
        response = await agent.provider.complete(request)
        latency = (time.perf_counter() - started) * 1000
        clean = self.redactor.value
        return ReplayOutcome(
            record=record, mode=mode, model=request.model,
            system_prompt=self.redactor.text(agent.system_prompt),
            parts=clean(prompt_parts(messages, default_counter())),
            reply=self.redactor.text(response.text),
            tool_calls=clean([{"name": c.name, "input": dict(c.input)}
                              for c in response.tool_calls]),
            stop_reason=response.stop_reason,
            usage={"input_tokens": response.usage.input_tokens,
                   "output_tokens": response.usage.output_tokens,
                   "cache_read_input_tokens": response.usage.cache_read_input_tokens},
            latency_ms=round(latency, 1))

    async def _assembled(self, agent: Agent, record: ReplyRecord) -> list[PromptMessage]:
        found = await self.store.get_by_ids(record.conversation_id, [record.inbound_id])
        inbound = found[0] if found else None
        if inbound is None or inbound.sequence is None:
            raise ConfigError(
                f"the turn record {record.id} answered ({record.inbound_id}) is no longer in "
                "the history (pruned or deleted); replay the recorded prompt instead "
                "(--recorded, or 'exactly as recorded' in the console)")
        # As it stood for that turn (nothing stored after it); no summarizer, so a replay
        # writes no summary.
        prompt = await assemble_prompt(self.store, record.conversation_id, agent.name,
                                       agent.name, agent.assembler_options, None,
                                       answering=inbound)
        return prompt.messages
