"""Rolling summaries: the oldest kept turns compressed into one stored summary per agent.

Each new summary merges the previous one with only the turns that became old since (the running
summary of LangMem), so every turn goes to the summarizer at most once and one summary stands at
a time. A summary is a stored turn (`is_summary`, `summary_of` = the sequence range it covers)
whose id is derived from the agent and that range: two workers summarizing the same turns at
once store one summary, not two. A failing, empty or slow summarizer never replaces turns.

Forgetting (`/forget`) uses the same slot. The history is shared by every agent of a
conversation, so one agent forgetting must not delete the turns the others still see (nor the
record operators keep). Instead a forget marker is stored as that agent's standing summary: an
empty summary of everything through the turn that asked for it (`forgotten_through`). The
assembler loads only turns after a standing summary anyway, shows no summary text for a marker,
and keeps recall and the search tool after the cutoff; the next real summary carries the cutoff
forward. Erasing a person's words for everyone is a different command (`/forget-me`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import structlog

from threadline.history.model import MessageMetadata, Participant, StoredMessage
from threadline.history.store import ConversationStore

log = structlog.get_logger("threadline.summary")


@runtime_checkable
class Summarizer(Protocol):
    """Turns old turns (plus the previous summary) into one summary text."""

    async def summarize(self, turns: list[StoredMessage], previous_summary: str | None) -> str: ...


FORGOTTEN_THROUGH = "forgotten_through"  # metadata key: the last sequence an agent forgot


def summary_participant_id(agent_id: str) -> str:
    return f"summary:{agent_id}"


def forgotten_through(summary: StoredMessage | None) -> int | None:
    """The last sequence the agent forgot, when a forget marker stands behind this summary."""
    if summary is None:
        return None
    value = summary.metadata.extra.get(FORGOTTEN_THROUGH)
    return int(value) if value is not None else None


def is_forget_marker(summary: StoredMessage | None) -> bool:
    """A standing summary that says only "forgotten": it has no text to show the model."""
    return summary is not None and summary.metadata.extra.get("forget_marker") is True


def forget_marker(*, conversation_id: str, agent_id: str, through: StoredMessage,
                  requested_by: str) -> StoredMessage:
    """The marker that makes `agent_id` forget this conversation through the turn `through`.

    Its id is derived from the agent and the cutoff, so a retried `/forget` stores it once.
    """
    sequence = through.sequence or 0
    return StoredMessage(
        id=f"forget:{agent_id}:{conversation_id}:{sequence}",
        conversation_id=conversation_id,
        participant=Participant(kind="system", id=summary_participant_id(agent_id),
                                display_name="Summary"),
        content=f"(history through turn {sequence} forgotten for {agent_id} at the request "
                f"of {requested_by})",
        timestamp=through.timestamp,
        metadata=MessageMetadata(channel_type=through.metadata.channel_type, is_summary=True,
                                 summary_of=(sequence, sequence),
                                 extra={"forget_marker": True, FORGOTTEN_THROUGH: sequence}),
    )


async def latest_summary(store: ConversationStore, conversation_id: str,
                         agent_id: str) -> StoredMessage | None:
    """The summary that stands for this agent in this conversation, if any."""
    return await store.latest_summary(conversation_id,
                                      participant_id=summary_participant_id(agent_id))


_locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()


def summary_lock(conversation_id: str, agent_id: str) -> asyncio.Lock:
    """One summarizing task per conversation and agent in this process."""
    key = (conversation_id, agent_id)
    lock = _locks.get(key)
    if lock is None:
        lock = _locks[key] = asyncio.Lock()
    return lock


async def roll_summary(
    *,
    store: ConversationStore,
    summarizer: Summarizer,
    previous: StoredMessage | None,
    old_turns: Sequence[StoredMessage],
    agent_id: str,
    time_limit: float,
) -> StoredMessage | None:
    """Summarize `old_turns` into a new stored summary; None (and a log line) on any failure."""
    if not old_turns:
        return None
    conversation_id = old_turns[0].conversation_id
    first = previous.metadata.summary_of[0] if previous and previous.metadata.summary_of else (
        old_turns[0].sequence or 0)
    last = old_turns[-1].sequence or 0
    bound = log.bind(conversation_id=conversation_id, agent=agent_id, turns=len(old_turns))
    try:
        async with asyncio.timeout(time_limit):
            text = await summarizer.summarize(
                list(old_turns),
                previous.content if previous and not is_forget_marker(previous) else None)
    except TimeoutError:
        bound.warning("summary.timeout", timeout_s=time_limit)
        return None
    except Exception as exc:  # a summarizer's failure must never fail the turn
        bound.warning("summary.failed", error=repr(exc))
        return None
    if not isinstance(text, str) or not text.strip():
        bound.warning("summary.empty")
        return None
    cutoff = forgotten_through(previous)
    summary = StoredMessage(
        id=f"summary:{agent_id}:{conversation_id}:{first}-{last}",
        conversation_id=conversation_id,
        participant=Participant(kind="system", id=summary_participant_id(agent_id),
                                display_name="Summary"),
        content=text.strip(),
        timestamp=old_turns[-1].timestamp,
        metadata=MessageMetadata(channel_type=old_turns[-1].metadata.channel_type,
                                 is_summary=True, summary_of=(first, last),
                                 extra={} if cutoff is None else {FORGOTTEN_THROUGH: cutoff}),
    )
    stored = await store.append(summary)
    bound.info("summary.stored" if stored else "summary.already_stored", covers=(first, last))
    return summary
