"""The `knowledge:` section: the sources agents answer from, and who reads which.

    knowledge:
      sources:
        help: {type: documents, folder: ./help-centre, link: "https://help.example.com/{stem}"}
      agents:
        support: [help]
      share: 0.5
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from threadline.settings_section import Section


class KnowledgeSettings(Section):
    """Documents agents answer from (docs/knowledge.md): each source has a `type:` (`documents`:
    a folder, files and pages, kept in the store; or a type a package registers) and that
    type's keys. `threadline knowledge sync` reads them into the store."""

    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The sources, by name; each entry's `type:` names its kind (default `documents`)."""
    agents: dict[str, list[str]] = Field(default_factory=dict)
    """The sources each agent reads, by agent name (an agent reads only these and `shared`)."""
    shared: list[str] = Field(default_factory=list)
    """Sources every agent reads."""
    share: float = Field(default=0.5, ge=0, lt=1)
    """The share of an agent's token budget held back for its knowledge block: all of it is
    used when the sections found spread over several documents, half when the first four are
    of one document (0: no automatic grounding; the knowledge_search tool stays)."""
    search_tokens: int = Field(default=300, ge=50)
    """Tokens a knowledge_search answer may take (it leaves out the sections the turn's block
    shows, so it only adds)."""

    @model_validator(mode="after")
    def _known_sources(self) -> KnowledgeSettings:
        for where, names in (("shared", self.shared),
                             *((f"agents.{a}", n) for a, n in self.agents.items())):
            unknown = sorted(set(names) - set(self.sources))
            if unknown:
                raise ValueError(f"{where} names {', '.join(unknown)}, which sources: does not "
                                 f"define (defined: {', '.join(self.sources) or 'none'})")
        return self
