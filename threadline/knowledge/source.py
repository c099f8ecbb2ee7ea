"""A knowledge source: what an agent may read from, and the plug a search service fits into.

    features:
      knowledge:
        sources:
          help: {type: documents, folder: ./help-centre, link: "https://help.example.com/{stem}"}
          wiki: {type: our_search, endpoint: "http://search.internal:9200"}

A source answers one question: the sections that best answer this `KnowledgeAsk`, best
first. The built-in `documents` type keeps its sections in the deployment's own backend and
searches them with recall's engine (`threadline.knowledge.documents_source`); a team that
already runs a search service registers its own type in the `threadline.knowledge` entry-point
group, pointing at a `SourceType`:

    [project.entry-points."threadline.knowledge"]
    our_search = "our_package:SOURCE_TYPE"

A source that keeps a copy of documents also `sync`s them (`threadline knowledge sync`); one
that asks a live service need not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from threadline.errors import ConfigError
from threadline.knowledge.sections import HEADING_SEPARATOR
from threadline.plugs import load_plug, plug_references

if TYPE_CHECKING:
    from threadline.history.store import ConversationStore
    from threadline.history.tokens import TokenCounter
    from threadline.knowledge.sync import SyncProgress, SyncReport

ENTRY_POINT_GROUP = "threadline.knowledge"
BUILT_IN = {"documents": "threadline.knowledge.documents_source:SOURCE_TYPE"}


@dataclass(frozen=True, slots=True)
class KnowledgeAsk:
    """What a knowledge search is for: the question, and the texts of the turns before it in
    the conversation, oldest first ("and for a child?" means nothing without them)."""

    question: str
    earlier: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FoundSection:
    """One section a source found: where it is (source, document, heading path, character
    range in the document's text), what it says, and its link when it has one."""

    id: str
    source: str
    document: str
    title: str
    headings: tuple[str, ...]
    text: str
    token_count: int
    start: int = 0
    end: int = 0
    link: str | None = None

    @property
    def path(self) -> str:
        """"Title > Heading > Subheading", as a citation names it."""
        return HEADING_SEPARATOR.join((self.title, *self.headings))


@runtime_checkable
class KnowledgeSource(Protocol):
    """A named source of sections (see the module docstring)."""

    @property
    def name(self) -> str: ...

    async def search(self, ask: KnowledgeAsk, *, limit: int) -> list[FoundSection]:
        """Up to `limit` sections for `ask`, best first."""
        ...


@runtime_checkable
class SyncedSource(KnowledgeSource, Protocol):
    """A source that keeps a copy of documents, brought up to date by `sync`."""

    async def sync(self, progress: SyncProgress) -> SyncReport: ...


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What a source is built from: its name, its settings (validated by its type's model),
    the deployment's history store (where the built-in type keeps sections), the folder the
    config file is in (relative paths start there) and the token counter."""

    name: str
    options: BaseModel
    history: ConversationStore
    config_dir: Path
    counter: TokenCounter


@dataclass(frozen=True, slots=True)
class SourceType:
    """A kind of source as the registry holds it: its name, its settings model and how to
    build one."""

    name: str
    settings: type[BaseModel]
    build: Callable[[SourceContext], KnowledgeSource]


def source_type_names() -> list[str]:
    return list(plug_references(ENTRY_POINT_GROUP, BUILT_IN))


def load_source_type(name: str) -> SourceType:
    """The source type registered as `name`; a `ConfigError` says what is wrong."""
    references = plug_references(ENTRY_POINT_GROUP, BUILT_IN)
    if name not in references:
        raise ConfigError(f"knowledge: no source type {name!r} (installed: "
                          f"{', '.join(references)}); install the package that provides it")
    try:
        found = load_plug(references[name])
    except ImportError as exc:
        raise ConfigError(f"knowledge source type {name!r} ({references[name]}) cannot be "
                          f"loaded: {exc}") from exc
    if not isinstance(found, SourceType) or found.name != name:
        raise ConfigError(f"{references[name]!r} is not the SourceType object for {name!r}")
    return found


def source_options(source: str, kind: SourceType, raw: dict[str, object]) -> BaseModel:
    """A source's settings validated by its type's model; a `ConfigError` names the field."""
    try:
        return kind.settings.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(source)'}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"features.knowledge.sources.{source}: {problems}") from exc
