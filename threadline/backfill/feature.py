"""Backfill as a feature: the `backfill` stage (`backfill:` in the YAML; see
`threadline.backfill.stage`)."""

from __future__ import annotations

from threadline.backfill.stage import BackfillStage
from threadline.features import Feature, FeatureContext, FeatureParts


def _build(context: FeatureContext) -> FeatureParts | None:
    settings = context.settings.backfill
    if not settings.enabled:
        return None
    return FeatureParts(stages={"backfill": BackfillStage(limit=settings.limit)})


FEATURE = Feature(name="backfill", build=_build)
