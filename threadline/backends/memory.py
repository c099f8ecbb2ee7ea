"""The memory backend (`memory://`): everything in this process, for tests and trying things out.

Its history, inbox, people directory, reply records, tool approvals, shard leases and turns'
vectors (when numpy is installed: the embeddings extra) live in process memory, and it says so
at start: nothing survives a restart. It keeps no spend ledger, and notifies changes within
this process only.
"""

from __future__ import annotations

from threadline.agents.approvals import MemoryApprovalBook
from threadline.backends.base import Backend, BackendOptions, BackendPlug
from threadline.channels.shard_leases import MemoryShardLeases
from threadline.errors import ConfigError
from threadline.feedback.votes import MemoryFeedbackBook
from threadline.history.beside import add_adopter
from threadline.history.memory import InMemoryConversationStore
from threadline.history.store import ConversationStore
from threadline.history.vectors import VectorIndex, vectors_supported
from threadline.inspector.records import InMemoryReplyRecords
from threadline.people.directory import MemoryPeopleDirectory
from threadline.people.link_requests import MemoryLinkRequests

NOTICE = "backend memory keeps everything in this process: nothing survives a restart"


def _vectors(history: InMemoryConversationStore) -> VectorIndex | None:
    if not vectors_supported():
        return None
    from threadline.backends.memory_vectors import MemoryVectorIndex  # needs numpy

    return MemoryVectorIndex(history)


def _parts(history: InMemoryConversationStore) -> Backend:
    return Backend(name="memory", history=history, shown_url="memory://", inbox=history.inbox,
                   people=MemoryPeopleDirectory(history), link_requests=MemoryLinkRequests(),
                   speakers=history,
                   records=InMemoryReplyRecords(), approvals=MemoryApprovalBook(),
                   feedback=MemoryFeedbackBook(),
                   shard_leases=MemoryShardLeases(), vectors=_vectors(history),
                   notices=(NOTICE,))


def build(url: str, options: BackendOptions) -> Backend:
    return _parts(InMemoryConversationStore())


def check_url(url: str) -> None:
    if url.rstrip("/") not in ("memory:", "memory"):
        raise ConfigError(f"store URL {url!r}: the memory backend takes no path or options; "
                          "write memory://")


def adopt(history: ConversationStore) -> Backend | None:
    return _parts(history) if isinstance(history, InMemoryConversationStore) else None


BACKEND = BackendPlug(name="memory", schemes=("memory",), build=build, check_url=check_url)
add_adopter(adopt)  # a history of ours built directly finds its parts
