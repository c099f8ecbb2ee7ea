"""Knowledge as a feature: each agent's sources, its `knowledge_search` tool and the knowledge
block grounding its turns (`knowledge:` in the YAML; docs/knowledge.md).

The sources are built from the settings (each by its type's plug, `threadline.knowledge.source`)
over the backend's history, where the built-in type keeps its sections; the feature is off,
saying so once, when no source is configured. Syncing is the operator's command (`threadline
knowledge sync`), never a surprise at start.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from pathlib import Path

import structlog

from threadline.features import Feature, FeatureContext, FeatureParts
from threadline.history.store import ConversationStore
from threadline.history.tokens import TokenCounter, default_counter
from threadline.knowledge.grounding import CANDIDATES, block_room, cite, fit_sections
from threadline.knowledge.library import Library
from threadline.knowledge.settings import KnowledgeSettings
from threadline.knowledge.source import (
    KnowledgeAsk,
    KnowledgeSource,
    SourceContext,
    load_source_type,
    source_options,
)
from threadline.knowledge.tool import knowledge_search_tool
from threadline.turn import Grounded, TurnContext

log = structlog.get_logger("threadline.knowledge")

# Turns whose shown sections are remembered for their search tool (turns in flight at once).
REMEMBERED_TURNS = 1024


def build_library(settings: KnowledgeSettings, *, history: ConversationStore, base_dir: Path,
                  counter: TokenCounter) -> Library:
    """Every configured source, built by its type, and who reads which."""
    sources: dict[str, KnowledgeSource] = {}
    for name, raw in settings.sources.items():
        kind = load_source_type(str(raw.get("type", "documents")))
        options = source_options(name, kind, dict(raw))
        sources[name] = kind.build(SourceContext(name=name, options=options, history=history,
                                                 config_dir=base_dir, counter=counter))
    return Library(sources, agents=settings.agents, shared=settings.shared)


class KnowledgeGrounding:
    """The `Grounding` the agent asks each turn (`threadline.turn.Grounding`)."""

    def __init__(self, library: Library, *, share: float, counter: TokenCounter) -> None:
        self.library = library
        self.share = share
        self.counter = counter
        self._shown: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()

    def reserve(self, agent: str, token_budget: int) -> int:
        return int(token_budget * self.share) if self.library.has_sources(agent) else 0

    async def ground(self, context: TurnContext, earlier: Sequence[str], *, room: int
                     ) -> Grounded | None:
        agent = context.agent.name
        found = await self.library.search(
            agent, KnowledgeAsk(context.inbound.content, tuple(earlier)), limit=CANDIDATES)
        fitted = fit_sections(found, room=block_room(found, room), counter=self.counter)
        self._remember((context.inbound.id, agent), tuple(s.id for s in fitted.sections))
        if fitted.message is None:
            return None
        context.log.info("knowledge.grounded", sections=len(fitted.sections),
                         tokens=fitted.tokens)
        return Grounded(message=fitted.message, tokens=fitted.tokens, shown=tuple(
            {"source": s.source, "document": s.document, "section": s.path, "link": s.link,
             "id": s.id, "cited_as": f"[{n}] {cite(s)}"}
            for n, s in enumerate(fitted.sections, start=1)))

    def shown(self, context: TurnContext) -> Collection[str]:
        """The sections this turn's block showed (its search tool leaves them out)."""
        return self._shown.get((context.inbound.id, context.agent.name), ())

    def _remember(self, key: tuple[str, str], ids: tuple[str, ...]) -> None:
        self._shown[key] = ids
        self._shown.move_to_end(key)
        while len(self._shown) > REMEMBERED_TURNS:
            self._shown.popitem(last=False)


def _build(context: FeatureContext) -> FeatureParts | None:
    settings = context.settings.knowledge
    if not settings.sources:
        return None
    counter = default_counter()
    library = build_library(settings, history=context.backend.history,
                            base_dir=context.settings.base_dir, counter=counter)
    grounding = KnowledgeGrounding(library, share=settings.share, counter=counter)
    log.info("knowledge.ready", sources=sorted(library.sources),
             agents={a: list(library.names_for(a)) for a in context.settings.agents})
    return FeatureParts(
        turn_tools=(knowledge_search_tool(library, counter=counter, room=settings.search_tokens,
                                          shown=grounding.shown),),
        grounding=grounding if settings.share > 0 else None)


FEATURE = Feature(name="knowledge", build=_build)
