"""Human handoff as a feature: `/human` and `/bot`, the `hand_off` tool, the `handoff` stage,
and the desk told on its channel (`handoff:` in the YAML; see `threadline.handoff.desk`)."""

from __future__ import annotations

from threadline.features import Feature, FeatureContext, FeatureParts, Running
from threadline.handoff.commands import handoff_commands
from threadline.handoff.desk import HandoffDesk, TeamDesk
from threadline.handoff.stage import HandoffStage
from threadline.handoff.tool import hand_off_tool
from threadline.team import Team


class _DeskService(Running):
    """Gives the desk the channels its notices go out on, once they are built."""

    def __init__(self, desk: HandoffDesk, context: FeatureContext) -> None:
        self.desk = desk
        self.context = context

    async def start(self, team: Team) -> None:
        self.desk.attach(self.context.channels, team.pipeline.inbox)


def _build(context: FeatureContext) -> FeatureParts | None:
    settings = context.settings.handoff
    if not settings.enabled or context.backend.handoffs is None:
        return None
    desk = HandoffDesk(
        context.backend.handoffs, pause_hours=settings.pause_hours,
        team=frozenset(settings.team),
        desk=TeamDesk(settings.notify.channel, settings.notify.chat) if settings.notify else None)
    # Only with a team to hand to: without one, a model handing off would silence the bot
    # with nobody told.
    tools = (hand_off_tool(desk),) if settings.tool and settings.notify is not None else ()
    return FeatureParts(commands=handoff_commands(desk, context.access), turn_tools=tools,
                        stages={"handoff": HandoffStage(desk)},
                        service=_DeskService(desk, context))


FEATURE = Feature(name="handoff", build=_build)
