"""Ambient agents as a feature: the `ambient` stage and the interceptor that keeps each
decision to speak with its reply (`ambient:` in the YAML; see `threadline.ambient.stage`)."""

from __future__ import annotations

from threadline.ambient.stage import AmbientStage, DecisionKept
from threadline.errors import ConfigError
from threadline.features import Feature, FeatureContext, FeatureParts


def _build(context: FeatureContext) -> FeatureParts | None:
    agents = context.settings.ambient.agents
    if not agents:
        return None
    for name, ambient in agents.items():
        if name not in context.settings.agents:
            raise ConfigError(f"ambient.agents: {name!r} is not in agents: (known: "
                              f"{', '.join(sorted(context.settings.agents))})")
        known = sorted(context.settings.channels)
        unknown = sorted(set(ambient.channels) - set(known))
        if unknown:
            raise ConfigError(f"ambient.agents.{name}.channels: {', '.join(unknown)} is not "
                              f"in channels: (known: {', '.join(known)})")
    stage = AmbientStage(agents)
    return FeatureParts(stages={"ambient": stage}, interceptors=(DecisionKept(stage),))


FEATURE = Feature(name="ambient", build=_build)
