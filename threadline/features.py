"""Features: the third plug, beside platforms and backends.

A feature is one folder that says what it adds to a deployment, and nothing else names it:

    commands      what people may send (`/remind`, `/human`, ...), offered on every platform
    interceptors  around each agent turn, after the runtime's own (the daily budgets)
    turn_tools    tools made for each turn, bound to its conversation and person
    toolsets      tools an agent is offered that may change between turns (an MCP server's)
    stages        its steps in every turn's walk, by slot (`threadline.stages.STAGE_ORDER`)
    approvals     the gate tool calls that need a person's approval wait at (one per
                  deployment: the approvals feature's), decided as presses arrive
    grounding     a block put in each agent turn's prompt beside the history (one per
                  deployment: the knowledge feature's sections; `threadline.turn.Grounding`)
    service       what runs beside the turns: started before turns are taken, ready (or
                  given up, in words) before the first one is answered, stopped after them

The runtime builds the features `BUILT_IN` lists, then each entry point of the
`threadline.features` group (a built-in name cannot be taken over):

    [project.entry-points."threadline.features"]
    tickets = "threadline_tickets:FEATURE"

pointing at a `Feature`. Its settings are the YAML's `features: {NAME: ...}` section,
validated by its `settings` model. A feature whose backend part is missing, or that its
settings turn off, builds nothing (`Feature.build` returns None) and says so once.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from threadline.errors import ConfigError
from threadline.plugs import load_plug, plug_references

if TYPE_CHECKING:
    from threadline.agents.agent import Toolset, TurnTool
    from threadline.agents.approvals import ApprovalGate
    from threadline.backends import Backend
    from threadline.channels.base import Channel
    from threadline.commands import Command
    from threadline.config import Settings
    from threadline.interceptors.base import Interceptor
    from threadline.ops import Metrics
    from threadline.people.access import Access
    from threadline.stages import Stage
    from threadline.team import Team
    from threadline.turn import Grounding

ENTRY_POINT_GROUP = "threadline.features"
# In the order they are built and started (stopped in reverse).
BUILT_IN = {
    "tracing": "threadline.tracing.feature:FEATURE",
    "access": "threadline.people.feature:ACCESS",
    "link_codes": "threadline.people.feature:LINK_CODES",
    "handoff": "threadline.handoff.feature:FEATURE",
    "schedules": "threadline.schedules.feature:FEATURE",
    "approvals": "threadline.agents.approvals_feature:FEATURE",
    "mcp": "threadline.agents.mcp_feature:FEATURE",
    "spend": "threadline.spend.feature:FEATURE",
    "feedback": "threadline.feedback.feature:FEATURE",
    # Before bursts: what was said before a burst is stored before the burst's turns.
    "backfill": "threadline.backfill.feature:FEATURE",
    "bursts": "threadline.bursts.feature:FEATURE",
    "ambient": "threadline.ambient.feature:FEATURE",
    "knowledge": "threadline.knowledge.feature:FEATURE",
}


class Service(Protocol):
    """What a feature runs beside the turns."""

    async def start(self, team: Team) -> None:
        """Begin (the team's channels are built and attached, not yet taking turns)."""
        ...

    async def ready(self) -> str | None:
        """Wait until ready or given up (its own timeout); None when ready, else why not,
        in words (the turns are then answered without it, and `/readyz` says so)."""
        ...

    async def stop(self) -> None: ...


class Running:
    """A `Service` to start from: ready at once, nothing to stop; override what it does."""

    async def start(self, team: Team) -> None:
        return None

    async def ready(self) -> str | None:
        return None

    async def stop(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class FeatureContext:
    """What a feature is built from: the deployment's settings and backend, the access lists
    every feature holds people to, the channels by name (filled as the runtime builds them,
    after the features: read them at start), the process's metrics and its own settings
    section."""

    settings: Settings
    backend: Backend
    access: Access
    channels: Mapping[str, Channel]
    metrics: Metrics
    options: BaseModel | None = None


@dataclass(frozen=True, slots=True)
class FeatureParts:
    """What one feature adds; see the module docstring."""

    commands: Sequence[Command] = ()
    interceptors: Sequence[Interceptor] = ()
    turn_tools: Sequence[TurnTool] = ()
    toolsets: Callable[[str], Sequence[Toolset]] | None = None  # by agent name
    stages: Mapping[str, Stage] = field(default_factory=dict)  # by slot
    service: Service | None = None
    approvals: ApprovalGate | None = None
    grounding: Grounding | None = None


@dataclass(frozen=True, slots=True)
class Feature:
    """A feature as the registry holds it: its name, its settings model (a `features:`
    section; None for built-ins, whose sections are the core's) and how to build it."""

    name: str
    build: Callable[[FeatureContext], FeatureParts | None]
    settings: type[BaseModel] | None = None


@dataclass(slots=True)
class BuiltFeatures:
    """Every feature of a deployment, built: their parts by feature name, in order."""

    parts: dict[str, FeatureParts] = field(default_factory=dict)

    @property
    def commands(self) -> list[Command]:
        return [c for p in self.parts.values() for c in p.commands]

    @property
    def interceptors(self) -> list[Interceptor]:
        return [i for p in self.parts.values() for i in p.interceptors]

    @property
    def turn_tools(self) -> list[TurnTool]:
        return [t for p in self.parts.values() for t in p.turn_tools]

    def toolsets(self, agent: str) -> list[Toolset]:
        return [t for p in self.parts.values() if p.toolsets for t in p.toolsets(agent)]

    @property
    def approvals(self) -> ApprovalGate | None:
        return next((p.approvals for p in self.parts.values() if p.approvals), None)

    @property
    def grounding(self) -> Grounding | None:
        return next((p.grounding for p in self.parts.values() if p.grounding), None)

    @property
    def stages(self) -> dict[str, Stage]:
        return {slot: stage for p in self.parts.values() for slot, stage in p.stages.items()}

    @property
    def services(self) -> dict[str, Service]:
        return {name: p.service for name, p in self.parts.items() if p.service is not None}


def feature_names() -> list[str]:
    """Every feature this installation has, built-ins first."""
    return list(plug_references(ENTRY_POINT_GROUP, BUILT_IN))


def load_feature(name: str) -> Feature:
    """The feature registered as `name`; a `ConfigError` says what is wrong with it."""
    reference = plug_references(ENTRY_POINT_GROUP, BUILT_IN)[name]
    try:
        feature = load_plug(reference)
    except ImportError as exc:
        raise ConfigError(f"feature {name!r} ({reference}) cannot be loaded: {exc}; install "
                          "the package that provides it, or uninstall the one that "
                          "registers it") from exc
    if not isinstance(feature, Feature) or feature.name != name:
        raise ConfigError(f"{reference!r} is not the Feature object for {name!r}")
    return feature


def feature_settings(settings: Settings) -> dict[Feature, BaseModel | None]:
    """Every registered feature, in registry order, with its `features:` section validated
    by its own model; a `ConfigError` names a section no feature has, or what is wrong in
    one (`check` and `run` both ask, before anything starts)."""
    names = feature_names()
    unknown = sorted(set(settings.features) - set(names))
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"features: no feature is named {', '.join(unknown)} (installed: "
                          f"{', '.join(names)}){hint}")
    features = [load_feature(name) for name in names]
    return {f: _options(f, settings.features.get(f.name, {})) for f in features}


def build_features(settings: Settings, backend: Backend, *, access: Access,
                   channels: Mapping[str, Channel], metrics: Metrics) -> BuiltFeatures:
    """Every registered feature built for this deployment, in registry order."""
    built = BuiltFeatures()
    for feature, options in feature_settings(settings).items():
        parts = feature.build(FeatureContext(settings=settings, backend=backend,
                                             access=access, channels=channels,
                                             metrics=metrics, options=options))
        if parts is not None:
            built.parts[feature.name] = parts
    return built


def _options(feature: Feature, raw: Mapping[str, Any]) -> BaseModel | None:
    if feature.settings is None:
        return None
    try:
        return feature.settings.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(section)'}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"features.{feature.name}: {problems}") from exc
