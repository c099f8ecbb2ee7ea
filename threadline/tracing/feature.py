"""Tracing as a feature: spans exported while the runtime runs (`tracing:` or the `OTEL_*`
variables; see `threadline.tracing.export`), each redacted by the process's redactor on its
way out. Started first and stopped last of the features, so every turn's spans are in it and
the last ones are flushed once every turn has ended."""

from __future__ import annotations

import asyncio

from threadline.features import Feature, FeatureContext, FeatureParts, Running
from threadline.inspector.redaction import redactor_for
from threadline.team import Team
from threadline.tracing.export import Tracing, start_tracing, wanted


class _Exporting(Running):
    def __init__(self, context: FeatureContext) -> None:
        self.context = context
        self.tracing: Tracing | None = None

    async def start(self, team: Team) -> None:
        settings = self.context.settings
        self.tracing = start_tracing(settings.tracing.options(),
                                     redactor=redactor_for(settings))

    async def stop(self) -> None:
        if self.tracing is not None:
            tracing, self.tracing = self.tracing, None
            await asyncio.to_thread(tracing.stop)  # the flush waits in a thread


def _build(context: FeatureContext) -> FeatureParts | None:
    if not wanted(context.settings.tracing.options()):
        return None
    return FeatureParts(service=_Exporting(context))


FEATURE = Feature(name="tracing", build=_build)
