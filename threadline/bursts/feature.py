"""Bursts as a feature: the `bursts` stage and the interceptor it stops answers with
(`bursts:` in the YAML; see `threadline.bursts.stage`)."""

from __future__ import annotations

from threadline.bursts.stage import BurstStage
from threadline.bursts.writing import ReplyWriting
from threadline.errors import ConfigError
from threadline.features import Feature, FeatureContext, FeatureParts, Running
from threadline.team import Team


class _Commands(Running):
    """Gives the stage the commands people may send (never part of a burst) once built."""

    def __init__(self, stage: BurstStage) -> None:
        self.stage = stage

    async def start(self, team: Team) -> None:
        self.stage.commands = team.pipeline.commands


def _build(context: FeatureContext) -> FeatureParts | None:
    settings = context.settings.bursts
    for kind, named, known in (("channels", settings.channels, context.settings.channels),
                               ("agents", settings.agents, context.settings.agents)):
        unknown = sorted(set(named) - set(known))
        if unknown:
            raise ConfigError(f"bursts.{kind}: {', '.join(unknown)} is not in {kind}: "
                              f"(known: {', '.join(sorted(known)) or 'none'})")
    modes = {settings.mode, *settings.channels.values(), *settings.agents.values()}
    if modes == {"each"}:
        return None  # every message its own turn, as without the feature
    writing = ReplyWriting()
    stage = BurstStage(settings, writing)
    return FeatureParts(stages={"bursts": stage}, interceptors=(writing,),
                        service=_Commands(stage))


FEATURE = Feature(name="bursts", build=_build)
