"""Spend as a feature: the daily token budgets checked before each agent turn (an
interceptor) and today's spend published to the metrics at start (`spend:` in the YAML; see
`threadline.spend.setup`)."""

from __future__ import annotations

from threadline.features import Feature, FeatureContext, FeatureParts, Running
from threadline.provider_setup import Providers
from threadline.spend.setup import build_spend_limit, publish_today
from threadline.team import Team


class _TodayPublished(Running):
    """Today's spend per agent into the metrics, once the store is open."""

    def __init__(self, context: FeatureContext) -> None:
        self.context = context

    async def start(self, team: Team) -> None:
        await publish_today(self.context.settings, self.context.backend, self.context.metrics)


def _build(context: FeatureContext) -> FeatureParts:
    limit = build_spend_limit(context.settings, context.backend, Providers(context.settings),
                              context.metrics)
    return FeatureParts(interceptors=(limit,) if limit is not None else (),
                        service=_TodayPublished(context))


FEATURE = Feature(name="spend", build=_build)
