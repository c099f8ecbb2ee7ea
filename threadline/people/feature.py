"""People's features: access lists and rate limits as turn stages, and `/link` codes.

`access` holds every kind of turn to the deployment's lists (`access:` and each agent's
`access:`), to its admins for the commands that act on others, and to the per-person rate
limit. `link_codes` offers `/link` where the backend keeps people (`people.link_codes`).
"""

from __future__ import annotations

import structlog

from threadline.features import Feature, FeatureContext, FeatureParts
from threadline.interceptors.rate_limit import Rate, RateLimitInterceptor
from threadline.people.link_codes import link_command
from threadline.people.stages import AccessStage, RateLimitStage
from threadline.stages import Stage

log = structlog.get_logger("threadline.features")


def _access(context: FeatureContext) -> FeatureParts:
    settings = context.settings.access
    stages: dict[str, Stage] = {"access": AccessStage(context.access)}
    if settings.rate_limit is not None:
        stages["rate_limit"] = RateLimitStage(RateLimitInterceptor(
            per_conversation=None, per_user=None,
            per_person=Rate(settings.rate_limit.turns, settings.rate_limit.per_seconds),
            reply=settings.rate_limit_reply))
    return FeatureParts(stages=stages)


def _link_codes(context: FeatureContext) -> FeatureParts | None:
    people = context.settings.people
    if not people.link_codes:
        return None
    if context.backend.people is None:
        log.warning("feature.off", feature="link_codes", backend=context.backend.name,
                    detail="this backend keeps no people, so /link is not offered")
        return None
    return FeatureParts(commands=(link_command(minutes=people.code_minutes),))


ACCESS = Feature(name="access", build=_access)
LINK_CODES = Feature(name="link_codes", build=_link_codes)
