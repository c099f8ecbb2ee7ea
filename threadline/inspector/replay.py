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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self

from threadline.agents.agent import Agent
from threadline.agents.llm import ModelRequest
from threadline.agents.tools import to_tool_spec
from threadline.errors import ConfigError, StoreError
from threadline.history.assembler import assemble_prompt
from threadline.history.model import Scope, StoredMessage, ToolExchange
from threadline.history.prompt import PromptMessage
from threadline.history.search_tool import make_conversation_search_tool
from threadline.history.store import ConversationInfo, ConversationStore, SearchWindow
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


class HistoryAsOf:
    """A read-only view of one conversation as it stood up to (and with) one sequence number."""

    def __init__(self, store: ConversationStore, conversation_id: str, last_sequence: int
                 ) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self.last_sequence = last_sequence

    def _visible(self, message: StoredMessage) -> bool:
        return (message.conversation_id == self.conversation_id
                and (message.sequence or 0) <= self.last_sequence)

    async def get(self, conversation_id: str, *, scope: Scope | None = None,
                  since: datetime | None = None, before: datetime | None = None,
                  limit: int | None = None, participant_ids: Iterable[str] | None = None,
                  after_sequence: int | None = None, include_summaries: bool = False,
                  ) -> list[StoredMessage]:
        turns = [m for m in await self.store.get(
            conversation_id, scope=scope, since=since, before=before,
            participant_ids=participant_ids, after_sequence=after_sequence,
            include_summaries=include_summaries) if self._visible(m)]
        return turns[-limit:] if limit else turns

    async def get_by_ids(self, conversation_id: str, ids: Iterable[str]) -> list[StoredMessage]:
        return [m for m in await self.store.get_by_ids(conversation_id, ids) if self._visible(m)]

    async def find_by_platform_id(self, conversation_id: str, platform_message_id: str
                                  ) -> StoredMessage | None:
        found = await self.store.find_by_platform_id(conversation_id, platform_message_id)
        return found if found is not None and self._visible(found) else None

    async def search(self, conversation_id: str, query: str, *, limit: int = 10,
                     token_cap: int = 2000) -> list[StoredMessage]:
        hits = await self.store.search(conversation_id, query, limit=limit * 4,
                                       token_cap=token_cap)
        return [m for m in hits if self._visible(m)][:limit]

    async def search_context(self, conversation_id: str, query: str, *, limit: int = 5,
                             context: int = 1, token_cap: int = 2000) -> list[SearchWindow]:
        windows = await self.store.search_context(conversation_id, query, limit=limit * 4,
                                                  context=context, token_cap=token_cap)
        kept = []
        for window in windows:
            members = tuple(m for m in window.messages if self._visible(m))
            hits = tuple(h for h in window.hit_ids if any(m.id == h for m in members))
            if hits:
                kept.append(SearchWindow(hits, members))
        return kept[:limit]

    async def latest_summary(self, conversation_id: str, *, participant_id: str | None = None
                             ) -> StoredMessage | None:
        summaries = [m for m in await self.get(conversation_id, include_summaries=True)
                     if m.is_summary and (participant_id is None
                                          or m.participant.id == participant_id)]
        return summaries[-1] if summaries else None

    async def count(self, conversation_id: str | None = None) -> int:
        return len(await self.get(conversation_id or self.conversation_id))

    async def list_conversations(self, *, limit: int = 100) -> list[ConversationInfo]:
        return [i for i in await self.store.list_conversations(limit=limit)
                if i.conversation_id == self.conversation_id]

    async def append(self, message: StoredMessage) -> bool:
        raise StoreError("a replay reads the history as it was and writes nothing")

    async def append_many(self, messages: Sequence[StoredMessage]) -> list[bool]:
        raise StoreError("a replay reads the history as it was and writes nothing")

    async def edit_message(self, conversation_id: str, message_id: str, content: str) -> bool:
        raise StoreError("a replay reads the history as it was and writes nothing")

    async def delete_messages(self, conversation_id: str, ids: Iterable[str]) -> int:
        raise StoreError("a replay reads the history as it was and writes nothing")

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        return None


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
            model=model or agent.model, system=agent.system_prompt, messages=messages,
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
        view = HistoryAsOf(self.store, record.conversation_id, inbound.sequence)
        # No summarizer: a replay reads the summaries of that time and writes none.
        prompt = await assemble_prompt(view, record.conversation_id, agent.name, agent.name,
                                       agent.assembler_options, None)
        return prompt.messages
