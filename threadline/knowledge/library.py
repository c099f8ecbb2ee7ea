"""Which sources each agent reads from, and a search over exactly those.

An agent's sources are the ones the YAML gives it by name (`agents: {support: [help]}`) plus
the shared ones; nothing said in a chat changes them. The search tool and the grounding of a
turn ask `Library.search` with the answering agent's name, which the runtime gives, and a
source that is not the agent's is never asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import structlog

from threadline.knowledge.retrieval import fuse_sources
from threadline.knowledge.source import FoundSection, KnowledgeAsk, KnowledgeSource

log = structlog.get_logger("threadline.knowledge")


class Library:
    """Every source of a deployment, and which agent reads which."""

    def __init__(self, sources: Mapping[str, KnowledgeSource], *,
                 agents: Mapping[str, Sequence[str]], shared: Sequence[str] = ()) -> None:
        self.sources = dict(sources)
        self._agents = {agent: tuple(dict.fromkeys([*names, *shared]))
                        for agent, names in agents.items()}
        self._shared = tuple(shared)

    def names_for(self, agent: str) -> tuple[str, ...]:
        """The names of the sources `agent` reads (the shared ones for an agent not named)."""
        return self._agents.get(agent, self._shared)

    def has_sources(self, agent: str) -> bool:
        return bool(self.names_for(agent))

    async def search(self, agent: str, ask: KnowledgeAsk, *, limit: int) -> list[FoundSection]:
        """Up to `limit` sections of `agent`'s own sources for `ask`, best first. A source
        that fails (a search service down, the store away) is logged and left out: the turn
        is answered from the others."""
        sources = [self.sources[name] for name in self.names_for(agent)]
        if not sources:
            return []
        answers = await asyncio.gather(*(s.search(ask, limit=limit) for s in sources),
                                       return_exceptions=True)
        found: list[list[FoundSection]] = []
        for source, answer in zip(sources, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):  # cancelled: the turn is going
                    raise answer
                log.warning("knowledge.search_failed", source=source.name, agent=agent,
                            error=f"{type(answer).__name__}: {answer}")
                continue
            found.append(answer)
        return fuse_sources(found, limit=limit) if found else []
